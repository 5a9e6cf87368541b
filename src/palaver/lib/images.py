"""Image decoding and resizing with Pillow, shared by avatars, realm images, emoji and thumbnails.

Every decode goes through ``open_image``: it bounds the pixel count before decoding (a tiny
file can claim to be 100,000 x 100,000 pixels) and turns any decoder failure into the
error users see, never a 500. Pillow (~4 MB with its libraries) loads with the first image
handled, not at start-up.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from palaver.lib.exceptions import JsonableError

if TYPE_CHECKING:
    from PIL import Image

# Larger images are refused rather than decoded (about 9k x 9k).
MAX_PIXELS = 80_000_000
# Animated images with more frames than this are treated as still (first frame) when resized.
MAX_FRAMES = 500

BAD_IMAGE = "Could not decode image; did you upload an image file?"

_FORMAT_TYPES = {"PNG": "image/png", "GIF": "image/gif", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class BadImageError(JsonableError):
    def __init__(self, msg: str = BAD_IMAGE) -> None:
        super().__init__(msg)


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    frames: int
    content_type: str

    @property
    def animated(self) -> bool:
        return self.frames > 1


def open_image(data: bytes, *, load: bool = True) -> Image.Image:
    """The decoded image (with ``load`` False, only its header: size, format, frames)."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415

    try:
        with warnings.catch_warnings():
            # Pillow warns (and our test settings turn warnings into errors) before it refuses.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > MAX_PIXELS:
                raise BadImageError("Image size exceeds limit.")
            if load:
                image.load()
    except BadImageError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, SyntaxError):
        raise BadImageError() from None
    if image.format not in _FORMAT_TYPES:
        raise BadImageError()
    return image


def image_info(data: bytes) -> ImageInfo:
    image = open_image(data, load=False)
    assert image.format is not None
    try:
        frames = int(getattr(image, "n_frames", 1))
    except (OSError, ValueError, EOFError):
        raise BadImageError() from None
    return ImageInfo(image.width, image.height, frames, _FORMAT_TYPES[image.format])


def _decoded(data: bytes, box: tuple[int, int]) -> Image.Image:
    """The image decoded no larger than needed for ``box``, upright.

    JPEG decoders can scale by 1/2, 1/4 or 1/8 while decoding (``draft``): a 12-megapixel
    photo becomes an avatar in a tenth of the time a full decode and resize take.
    """
    from PIL import ImageOps  # noqa: PLC0415

    image = open_image(data, load=False)
    if image.format == "JPEG":
        image.draft("RGB", (box[0] * 2, box[1] * 2))
    try:
        image.load()
    except (OSError, ValueError, SyntaxError):
        raise BadImageError() from None
    # Phone photos are stored sideways with an EXIF orientation; pictures must look upright.
    upright = ImageOps.exif_transpose(image)
    return upright if upright is not None else image


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6)
    return out.getvalue()


def _rgba(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGBA" else image.convert("RGBA")


def square_pngs(data: bytes, sizes: tuple[int, ...]) -> list[bytes]:
    """The image cropped to a centred square and resized to each size, as PNGs (one decode)."""
    from PIL import Image  # noqa: PLC0415

    image = _decoded(data, (max(sizes), max(sizes)))
    side = min(image.width, image.height)
    left, top = (image.width - side) // 2, (image.height - side) // 2
    square = _rgba(image.crop((left, top, left + side, top + side)))
    return [_png(square.resize((size, size), Image.Resampling.LANCZOS, reducing_gap=3.0)) for size in sizes]


def square_png(data: bytes, size: int) -> bytes:
    return square_pngs(data, (size,))[0]


def fit_png(data: bytes, max_width: int, max_height: int) -> bytes:
    """The image scaled down (never up) to fit the box, aspect kept, as PNG."""
    from PIL import Image  # noqa: PLC0415

    image = _rgba(_decoded(data, (max_width, max_height)))
    image.thumbnail((max_width, max_height), Image.Resampling.LANCZOS)
    return _png(image)


def resize_frames(data: bytes, max_width: int, max_height: int, fmt: str, *, animated: bool = True) -> bytes:
    """The image scaled down to fit the box in ``fmt`` ("png", "webp", "gif", "jpg").

    With ``animated`` and an animated source every frame is kept (GIF and WebP only);
    otherwise the first frame.
    """
    from PIL import Image, ImageSequence  # noqa: PLC0415

    image = open_image(data, load=False)
    frames = getattr(image, "n_frames", 1)
    out = io.BytesIO()
    pil_format = {"jpg": "JPEG", "jpeg": "JPEG"}.get(fmt, fmt.upper())
    if animated and frames > 1 and frames <= MAX_FRAMES and pil_format in ("GIF", "WEBP"):
        resized: list[Image.Image] = []
        durations: list[int] = []
        try:
            for frame in ImageSequence.Iterator(image):
                copy = _rgba(frame.copy())
                copy.thumbnail((max_width, max_height), Image.Resampling.LANCZOS)
                resized.append(copy)
                durations.append(int(frame.info.get("duration", 100)))
        except (OSError, ValueError, SyntaxError):
            raise BadImageError() from None
        resized[0].save(
            out,
            format=pil_format,
            save_all=True,
            append_images=resized[1:],
            duration=durations,
            loop=image.info.get("loop", 0),
            disposal=2,
        )
        return out.getvalue()
    still = _decoded(data, (max_width, max_height))
    still = still.convert("RGB") if pil_format == "JPEG" else _rgba(still)
    still.thumbnail((max_width, max_height), Image.Resampling.LANCZOS)
    still.save(out, format=pil_format)
    return out.getvalue()


def emoji_images(data: bytes, extension: str, size: int) -> tuple[bytes, bytes | None]:
    """(picture, still PNG or None) of a custom emoji: scaled to fit ``size`` when larger.

    Animated images stay animated and get a still first frame, which clients show to users
    who turned animation off.
    """
    info = image_info(data)
    small = info.width <= size and info.height <= size
    picture = data if small else resize_frames(data, size, size, extension, animated=True)
    still = resize_frames(data, size, size, "png", animated=False) if info.animated else None
    return picture, still
