"""Link and image previews: which links to preview, reading Open Graph data, and the markup.

Previews are made after a message is sent, by the preview worker (workers/previews.py), and
appended to its rendered content: an image link becomes a ``message_inline_image`` block, a
web page a ``message_embed`` block (title, description, picture), as Zulip renders them.
Pictures are fetched once and stored here (``<realm>/previews/<hash>.webp``, served at
``/user_avatars/``), so readers' clients never contact the linked site.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from html import escape, unescape
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

MAX_PREVIEWS_PER_MESSAGE = 3
MAX_PAGE_BYTES = 1024 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024
PREVIEW_IMAGE_SIZE = (840, 560)
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_LINK = re.compile(r'<a href="(https?://[^"]+)"')
_MAX_TITLE = 300
_MAX_DESCRIPTION = 1000


def preview_links(html: str, own_hosts: set[str]) -> list[str]:
    """External links of a rendered message worth previewing, first ones first."""
    found: list[str] = []
    for match in _LINK.finditer(html):
        url = unescape(match[1])
        host = (urlsplit(url).hostname or "").lower()
        if not host or host in own_hosts or url in found:
            continue
        found.append(url)
        if len(found) == MAX_PREVIEWS_PER_MESSAGE:
            break
    return found


def looks_like_image(url: str) -> bool:
    return urlsplit(url).path.lower().endswith(_IMAGE_EXTENSIONS)


def preview_image_key(realm_id: int, url: str) -> str:
    digest = hashlib.sha256(url.encode()).hexdigest()[:40]
    return f"{realm_id}/previews/{digest}.webp"


def stored_image_url(key: str) -> str:
    return f"/user_avatars/{key}"


@dataclass(frozen=True)
class PageData:
    title: str | None
    description: str | None
    image: str | None


class _MetaReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, str] = {}
        self.title: list[str] = []
        self._in_title = False
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k.lower(): (v or "") for k, v in attrs}
        if tag == "meta":
            key = (values.get("property") or values.get("name") or "").lower()
            if key and "content" in values:
                self.meta.setdefault(key, values["content"].strip())
        elif tag == "title":
            self._in_title = True
        elif tag == "body":
            self.done = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "head":
            self.done = True

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)


def read_page(body: bytes, base_url: str) -> PageData:
    """Open Graph data (falling back on <title> and the description meta) of a page."""
    reader = _MetaReader()
    text = body.decode("utf-8", errors="replace")
    # Fed in pieces, stopping at the end of <head>: the rest of a page says nothing here.
    for start in range(0, len(text), 16384):
        reader.feed(text[start : start + 16384])
        if reader.done:
            break
    meta = reader.meta
    title = meta.get("og:title") or " ".join("".join(reader.title).split()) or None
    description = meta.get("og:description") or meta.get("description") or None
    image = meta.get("og:image") or meta.get("og:image:url") or None
    if image:
        image = urljoin(base_url, image)
        if urlsplit(image).scheme not in ("http", "https"):
            image = None
    return PageData(
        title[:_MAX_TITLE] if title else None,
        description[:_MAX_DESCRIPTION] if description else None,
        image,
    )


def image_markup(url: str, src: str) -> str:
    href = escape(url)
    return (
        f'<div class="message_inline_image"><a href="{href}" title="{href}">'
        f'<img src="{escape(src)}"></a></div>'
    )


def embed_markup(url: str, page: PageData, image_src: str | None) -> str | None:
    if not page.title and not page.description:
        return None
    href = escape(url)
    parts = ['<div class="message_embed">']
    if image_src:
        parts.append(
            f'<a class="message_embed_image" href="{href}" '
            f'style="background-image: url(&quot;{escape(image_src)}&quot;)"></a>'
        )
    parts.append('<div class="data-container">')
    if page.title:
        title = escape(page.title)
        parts.append(f'<div class="message_embed_title"><a href="{href}" title="{title}">{title}</a></div>')
    if page.description:
        parts.append(f'<div class="message_embed_description">{escape(page.description)}</div>')
    parts.append("</div></div>")
    return "".join(parts)
