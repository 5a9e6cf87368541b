"""How user content is served: the type from the bytes, inline or attachment, and its headers.

Everything people upload (files, avatars, custom emoji, organization icons and logos, link
preview pictures, thumbnails) is served from the organization's own origin unless
``user_content_url`` moves it elsewhere, so no uploaded byte may ever be run there as a page
or a script. Three independent guards, each enough on its own for today's browsers:

- the served type is decided from the file's first bytes against a short allow-list, never
  from what the uploader declared or named it; anything not on the list is
  ``application/octet-stream``, which no browser renders;
- only raster images, audio, video, PDF and UTF-8 text are ``inline``; everything else is an
  ``attachment`` (a download, never a document);
- every response carries ``Content-Security-Policy: default-src 'none'; sandbox`` (a unique
  opaque origin, no script, no requests to anything but what inline media need) and
  ``X-Content-Type-Options: nosniff`` (no guessing a script or stylesheet out of it).

SVG, HTML, XML and the rest are never inline: they can carry script.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib.realm import get_realm_by_string_id, subdomain_for_host

OCTET_STREAM = "application/octet-stream"
PLAIN_TEXT = "text/plain; charset=utf-8"

# Raster images browsers decode without script; what the detector below can name.
RASTER_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})
_MEDIA_TYPES = frozenset(
    {
        "video/mp4",
        "video/webm",
        "video/quicktime",
        "video/ogg",
        "audio/mp4",
        "audio/mpeg",
        "audio/ogg",
        "audio/wav",
        "audio/flac",
        "audio/webm",
    }
)
INLINE_TYPES = RASTER_IMAGE_TYPES | _MEDIA_TYPES | {"application/pdf", PLAIN_TEXT}

# How much of a file the detector reads: enough for every signature and a text check.
SNIFF_BYTES = 8192

# (offset, bytes there, type): fixed signatures, first match wins.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),  # after "RIFF" and a length, checked below
    (8, b"WAVE", "audio/wav"),
    (0, b"fLaC", "audio/flac"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"\xff\xf2", "audio/mpeg"),
    (0, b"%PDF-", "application/pdf"),
)
# ISO base media files (MP4, MOV, AVIF, M4A): "ftyp" at 4, then the major brand.
_BRANDS = {
    b"avif": "image/avif",
    b"avis": "image/avif",
    b"M4A ": "audio/mp4",
    b"M4B ": "audio/mp4",
    b"qt  ": "video/quicktime",
}
# Containers holding audio or video alike: the name's extension picks (both types are safe).
_CONTAINERS = (
    (b"\x1a\x45\xdf\xa3", "video/webm", "audio/webm", (".weba", ".mka")),
    (b"OggS", "audio/ogg", "video/ogg", (".ogv",)),
)

# Text that a browser could take for markup if anything ever served it as such: not shown
# as text either, so "view" never means "render".
_MARKUP_STARTS = (b"<", b"\xef\xbb\xbf<")


def detect_type(data: bytes, file_name: str = "") -> str:
    """The type to serve ``data`` as: one of ``INLINE_TYPES`` when its bytes say so, else
    ``application/octet-stream``. ``file_name`` only chooses between two safe types the
    bytes cannot tell apart (Ogg and WebM carry audio or video alike)."""
    head = data[:SNIFF_BYTES]
    for offset, signature, content_type in _SIGNATURES:
        if head.startswith(signature, offset) and (offset != 8 or head.startswith(b"RIFF")):
            return content_type
    if head.startswith(b"ftyp", 4) and len(head) >= 12:
        return _BRANDS.get(head[8:12], "video/mp4")
    for signature, usual, other, extensions in _CONTAINERS:
        if head.startswith(signature):
            return other if file_name.lower().endswith(extensions) else usual
    if _is_plain_text(head, complete=len(data) <= SNIFF_BYTES):
        return PLAIN_TEXT
    return OCTET_STREAM


def _is_plain_text(head: bytes, *, complete: bool) -> bool:
    if head.lstrip(b" \t\r\n\f").startswith(_MARKUP_STARTS):
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        # A multi-byte character cut at the end of the sample is still text.
        if complete or error.start < len(head) - 3:
            return False
        text = head[: error.start].decode("utf-8")
    return not any((ord(c) < 32 and c not in "\t\n\r\f") or c == "\x7f" for c in text)


@dataclass(frozen=True)
class Served:
    """How one piece of user content goes out: its type and whether it is shown inline."""

    content_type: str
    inline: bool

    @property
    def content_security_policy(self) -> str:
        return content_security_policy(self.content_type)


def served_as(data: bytes, file_name: str = "") -> Served:
    content_type = detect_type(data, file_name)
    return Served(content_type, content_type in INLINE_TYPES)


def content_security_policy(content_type: str) -> str:
    """``default-src 'none'; sandbox``, plus what an inline type needs to show itself when
    opened on its own: the browser's image or media viewer loads the URL again (``img-src``
    or ``media-src 'self'``) and lays it out with inline styles, as its text and PDF viewers
    do (``style-src 'unsafe-inline'``: styles in a document that runs no script and may load
    nothing else change only how it looks)."""
    if content_type not in INLINE_TYPES:
        return "default-src 'none'; sandbox"
    if content_type.startswith("image/"):
        source = "img-src 'self'; "
    elif content_type.startswith(("video/", "audio/")):
        source = "media-src 'self'; "
    else:
        source = ""
    return f"default-src 'none'; {source}style-src 'unsafe-inline'; sandbox"


def content_disposition(inline: bool, file_name: str) -> str:
    # RFC 5987 encoding only: no quotes or separators of the raw name reach the header.
    return f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{quote(file_name, safe='')}"


def user_content_headers(served: Served, file_name: str | None, cache_control: str) -> dict[str, str]:
    """Every header a piece of user content is served with except its type."""
    headers = {
        "Content-Security-Policy": served.content_security_policy,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": cache_control,
    }
    if file_name is not None:
        headers["Content-Disposition"] = content_disposition(served.inline, file_name)
    elif not served.inline:
        headers["Content-Disposition"] = "attachment"
    return headers


def host_serves_realm(session: Session, settings: Settings, host: str, realm_id: int) -> bool:
    """Whether ``host`` is organization ``realm_id``'s own: the only host where its files,
    pictures and tokens answer (a URL of one organization opened on another's host is not
    found, so nothing of B's ever runs or is shown as A's)."""
    realm = get_realm_by_string_id(session, subdomain_for_host(settings, host))
    return realm is not None and realm.id == realm_id
