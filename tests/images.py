"""Real image bytes for tests (made with Pillow, so servers decoding them see valid files)."""

from __future__ import annotations

import io

from PIL import Image


def image_bytes(width: int, height: int, fmt: str = "PNG", colour: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format=fmt)
    return out.getvalue()


def animated_gif(width: int, height: int, frames: int = 3) -> bytes:
    colours = ["red", "green", "blue", "yellow"]
    images = [Image.new("RGB", (width, height), colours[i % len(colours)]) for i in range(frames)]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:], duration=100, loop=0)
    return out.getvalue()


def decode(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


PNG = image_bytes(16, 16)
GIF = animated_gif(16, 16)
