"""Thumbnails of uploaded images, Zulip 9 style.

At upload the image's size is recorded (``ImageAttachment``); the thumbnail worker
(workers/thumbnails.py) then makes each format of ``THUMBNAIL_FORMATS`` and stores it under
``thumbnail/<path_id>/<format name>``, served at ``/user_uploads/thumbnail/<path_id>/<name>``.

Messages show an uploaded image as ``<img>`` inside a ``message_inline_image`` block. Until
the thumbnails exist its ``src`` is a loading placeholder (class ``image-loading-placeholder``);
once they do, the worker rewrites the messages and sends ``update_message`` events with
``rendering_only``. ``thumbnail_markup`` makes either form from the current state, so running
it again over rendered HTML is always safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from html import escape, unescape
from urllib.parse import quote, unquote, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import RealmRow
from palaver.lib.images import BadImageError, image_info, resize_frames
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.storage import UPLOAD_URL_PREFIX, FileStorage
from palaver.lib.user_content import RASTER_IMAGE_TYPES, detect_type
from palaver.models.media import ImageAttachment

THUMBNAIL_URL_PREFIX = "/user_uploads/thumbnail/"
LOADING_PLACEHOLDER = "/static/images/loading/loader-black.svg"
PENDING, DONE, FAILED = "pending", "done", "failed"

# Content types thumbnailed; others (SVG above all: it can carry scripts) are left alone.
THUMBNAILED_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True)
class ThumbnailFormat:
    extension: str
    max_width: int
    max_height: int
    animated: bool

    @property
    def name(self) -> str:
        return f"{self.max_width}x{self.max_height}{'-anim' if self.animated else ''}.{self.extension}"

    def as_dict(self) -> dict[str, str | int | bool]:
        return {
            "name": self.name,
            "max_width": self.max_width,
            "max_height": self.max_height,
            "format": self.extension,
            "animated": self.animated,
        }


# Zulip's defaults: one still and one animated WebP, fitting 840 x 560.
THUMBNAIL_FORMATS = (
    ThumbnailFormat("webp", 840, 560, animated=True),
    ThumbnailFormat("webp", 840, 560, animated=False),
)
_STILL = next(f for f in THUMBNAIL_FORMATS if not f.animated)


def server_thumbnail_formats() -> list[dict[str, str | int | bool]]:
    return [f.as_dict() for f in THUMBNAIL_FORMATS]


def formats_for(image: ImageAttachment) -> list[ThumbnailFormat]:
    """Animated formats are made only of animated images."""
    return [f for f in THUMBNAIL_FORMATS if not f.animated or image.frames > 1]


def thumbnail_key(path_id: str, name: str) -> str:
    return f"thumbnail/{path_id}/{name}"


def thumbnail_url(path_id: str, name: str) -> str:
    return THUMBNAIL_URL_PREFIX + quote(path_id) + "/" + name


def format_by_name(name: str) -> ThumbnailFormat | None:
    return next((f for f in THUMBNAIL_FORMATS if f.name == name), None)


def thumbnail_or_original(storage: FileStorage, path_id: str, file_name: str, name: str) -> bytes | None:
    """The thumbnail's bytes; until it is made (or if it cannot be), the original's if that
    is a raster image (never an SVG or a page standing in for a picture); else None."""
    data = storage.read(thumbnail_key(path_id, name))
    if data is None:
        data = storage.read(path_id)
        if data is None or detect_type(data, file_name) not in RASTER_IMAGE_TYPES:
            return None
    return data


def describe_upload(data: bytes, content_type: str | None) -> tuple[int, int, int, str] | None:
    """(width, height, frames, content type) of an uploaded image worth thumbnailing."""
    try:
        info = image_info(data)
    except BadImageError:
        return None
    if info.content_type not in THUMBNAILED_TYPES:
        return None
    return info.width, info.height, info.frames, info.content_type


def make_thumbnail(data: bytes, fmt: ThumbnailFormat) -> bytes:
    return resize_frames(data, fmt.max_width, fmt.max_height, fmt.extension, animated=fmt.animated)


def images_by_path_id(session: Session, realm_id: int, path_ids: Iterable[str]) -> dict[str, ImageAttachment]:
    wanted = sorted(set(path_ids))
    if not wanted:
        return {}
    rows = session.scalars(
        select(ImageAttachment).where(
            ImageAttachment.realm_id == realm_id, ImageAttachment.path_id.in_(wanted)
        )
    )
    return {row.path_id: row for row in rows}


# Markup ---------------------------------------------------------------------------------------

# An upload's preview block, as the Markdown renderer writes it and as this module rewrites it.
_PREVIEW = re.compile(r'<div class="message_inline_image"><a (?P<a>[^>]*)><img (?P<img>[^>]*)></a></div>')
_HREF = re.compile(r'\bhref="([^"]*)"')


def _preview_href(match: re.Match[str]) -> str:
    found = _HREF.search(match["a"])
    return found[1] if found else ""


def upload_path_id(href: str) -> str | None:
    path = urlsplit(unescape(href)).path
    if path.startswith("user_uploads/"):
        path = "/" + path
    if not path.startswith(UPLOAD_URL_PREFIX) or path.startswith(THUMBNAIL_URL_PREFIX):
        return None
    return unquote(path.removeprefix(UPLOAD_URL_PREFIX))


def preview_path_ids(html: str) -> set[str]:
    return {p for m in _PREVIEW.finditer(html) if (p := upload_path_id(_preview_href(m))) is not None}


def _image_tag(image: ImageAttachment) -> str:
    attrs = [
        f'data-original-content-type="{escape(image.content_type)}"',
        f'data-original-dimensions="{image.original_width}x{image.original_height}"',
    ]
    if image.frames > 1:
        attrs.insert(0, 'data-animated="true"')
    if image.status == DONE and _STILL.name in image.thumbnails.split(","):
        attrs.append(f'src="{escape(thumbnail_url(image.path_id, _STILL.name))}"')
    elif image.status == FAILED:
        attrs.append(f'src="{escape(UPLOAD_URL_PREFIX + quote(image.path_id))}"')
    else:
        attrs.insert(0, 'class="image-loading-placeholder"')
        attrs.append(f'src="{LOADING_PLACEHOLDER}"')
    return f"<img {' '.join(attrs)}>"


def thumbnail_markup(html: str, images: Mapping[str, ImageAttachment]) -> str:
    """``html`` with each uploaded image's preview showing its thumbnail or the placeholder."""

    def replace(match: re.Match[str]) -> str:
        path_id = upload_path_id(_preview_href(match))
        image = images.get(path_id) if path_id is not None else None
        if image is None:
            return match[0]
        return f'<div class="message_inline_image"><a {match["a"]}>{_image_tag(image)}</a></div>'

    return _PREVIEW.sub(replace, html)


def without_image_previews(html: str) -> str:
    """For organizations with ``inline_image_preview`` off: no preview blocks."""
    return _PREVIEW.sub("", html)


def has_placeholder(html: str) -> bool:
    return "image-loading-placeholder" in html


def apply_media_markup(session: Session, realm: RealmRow, result: RenderResult) -> RenderResult:
    """A rendered message with its uploaded images shown as the organization wants them."""
    html = result.html
    if "message_inline_image" not in html:
        return result
    if not realm.inline_image_preview:
        html = without_image_previews(html)
    else:
        html = thumbnail_markup(html, images_by_path_id(session, realm.id, preview_path_ids(html)))
    return replace(result, html=html)
