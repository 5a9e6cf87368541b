"""Core rules over the parsed tokens: linkifiers in text, local and upload links, media previews."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from palaver.lib.emoji import emoji_name_for_code, find_emoji_sequences
from palaver.lib.markdown.contract import LinkifierRef
from palaver.lib.markdown.state import Collector, collector_of, emoji_html
from palaver.lib.markdown.urls import file_name, linkifier_matches

_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
_VIDEO_EXTENSIONS = (".mp4", ".webm", ".mov", ".m4v")
_AUDIO_EXTENSIONS = (".mp3", ".aac", ".flac", ".wav")
_MAX_PREVIEWS = 10


# -- core rules: text, links and previews ---------------------------------------------------------


def _text_token(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _split_text(content: str, linkifiers: Sequence[LinkifierRef], in_link: bool) -> list[Token] | None:
    """Linkifier links and Unicode emoji within one text token; None when there are none."""
    spans: list[tuple[int, int, str, str]] = []
    if linkifiers and not in_link:
        spans.extend((s, e, "link", url) for s, e, url in linkifier_matches(content, linkifiers))
    emoji = find_emoji_sequences(content)
    if not spans and not emoji:
        return None
    taken = [(s, e) for s, e, _, _ in spans]
    for start, end, code in emoji:
        if not any(s < end and start < e for s, e in taken):
            spans.append((start, end, "emoji", code))
    spans.sort()
    tokens: list[Token] = []
    last = 0
    for start, end, kind, value in spans:
        if start > last:
            tokens.append(_text_token(content[last:start]))
        if kind == "link":
            opener = Token("link_open", "a", 1)
            opener.attrs = {"href": value}
            opener.markup = "linkifier"
            tokens.extend([opener, _text_token(content[start:end]), Token("link_close", "a", -1)])
        else:
            name = emoji_name_for_code(value) or value
            html = Token("palaver_html", "", 0)
            html.content = emoji_html(name, value)
            tokens.append(html)
        last = end
    if last < len(content):
        tokens.append(_text_token(content[last:]))
    return tokens


def _local_link(href: str, realm_url: str) -> str:
    """Links into the realm itself, made relative as Zulip makes them."""
    prefix = realm_url.rstrip("/") + "/"
    if realm_url and href.startswith((prefix + "#", prefix + "user_uploads/")):
        return href.removeprefix(prefix)
    return href


def _is_upload(href: str) -> bool:
    return href.startswith(("/user_uploads/", "user_uploads/"))


def _upload_kind(href: str) -> str | None:
    """ "image", "video" or "audio" for an uploaded file of that kind, by its extension."""
    if not _is_upload(href):
        return None
    path = urlsplit(href).path.lower()
    if path.endswith(_IMAGE_EXTENSIONS):
        return "image"
    if path.endswith(_VIDEO_EXTENSIONS):
        return "video"
    if path.endswith(_AUDIO_EXTENSIONS):
        return "audio"
    return None


def _media_html(token: Token, src: str, collector: Collector) -> str | None:
    """Markdown image syntax: only uploaded images and audio are shown as media."""
    kind = _upload_kind(src)
    alt = escapeHtml("".join(child.content for child in token.children or ()))
    if kind == "image":
        collector.has_image = True
        return f'<img alt="{alt}" class="inline-image" src="{escapeHtml(src)}">'
    if kind == "audio":
        name = escapeHtml(file_name(src))
        return f'<audio controls preload="metadata" src="{escapeHtml(src)}" title="{name}"></audio>'
    return None


def _inline_children_rule(state: StateCore) -> None:
    """Per inline run: linkifiers, Unicode emoji, image syntax, and link bookkeeping."""
    collector = collector_of(state.env)
    ctx = collector.ctx
    linkifiers = ctx.linkifiers if ctx is not None else ()
    realm_url = ctx.realm_url if ctx is not None else ""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            if token.type == "text":
                pieces = _split_text(token.content, linkifiers, depth > 0)
                children.extend(pieces if pieces is not None else [token])
            elif token.type == "image":
                src = _local_link(str(token.attrGet("src") or ""), realm_url)
                media = _media_html(token, src, collector)
                if media is not None:
                    html = Token("palaver_html", "", 0)
                    html.content = media
                    html.meta = {"href": src}
                    children.append(html)
                else:
                    # Other images are not embedded (that would load third-party content
                    # for every reader): they become links.
                    opener = Token("link_open", "a", 1)
                    opener.attrs = {"href": src}
                    children.extend([opener, *(token.children or []), Token("link_close", "a", -1)])
            else:
                children.append(token)
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
        for token in children:
            if token.type == "palaver_html" and "href" in token.meta:
                href = token.meta["href"]
            elif token.type == "link_open":
                href = _local_link(str(token.attrGet("href") or ""), realm_url)
                token.attrSet("href", href)
                token.attrSet("target", "_blank")
            else:
                continue
            if href and href not in collector.links:
                collector.links.append(href)
            if _is_upload(href):
                collector.has_attachment = True
        block.children = children


def _preview_rule(state: StateCore) -> None:
    """Previews of linked uploaded images and videos, as blocks after the block linking them.

    Previews follow the top-level block, or the paragraph inside a spoiler (so that they
    stay hidden with it); links in quotes get none, as a quoted image was already shown.
    """
    collector = collector_of(state.env)
    if not collector.has_attachment:
        return
    result: list[Token] = []
    containers: list[Token] = []
    pending: list[tuple[int, list[tuple[str, str]]]] = []
    previews = 0
    for token in state.tokens:
        result.append(token)
        if token.type in ("blockquote_open", "palaver_spoiler_open"):
            containers.append(token)
        elif token.type in ("blockquote_close", "palaver_spoiler_close"):
            containers.pop()
        if token.type == "inline" and token.children:
            if any(c.type == "blockquote_open" for c in containers):
                continue
            media = [
                (kind, str(child.attrGet("href")))
                for child in token.children
                if child.type == "link_open"
                and (kind := _upload_kind(str(child.attrGet("href")))) in ("image", "video")
            ]
            if media:
                level = containers[-1].level + 1 if containers else 0
                pending.append((level, media))
            continue
        if token.nesting == 1:
            continue
        for entry in [p for p in pending if p[0] == token.level]:
            pending.remove(entry)
            for kind, href in entry[1]:
                if previews >= _MAX_PREVIEWS:
                    break
                preview = Token("palaver_preview", "div", 0)
                preview.attrs = {"href": href}
                preview.info = kind
                preview.block = True
                result.append(preview)
                previews += 1
                collector.has_image |= kind == "image"
    state.tokens = result


def install_link_rules(md: MarkdownIt) -> None:
    """Add the passes over each parsed message: linkifiers and link bookkeeping, then previews."""
    md.core.ruler.after("text_join", "palaver_inline_children", _inline_children_rule)
    md.core.ruler.after("palaver_inline_children", "palaver_preview", _preview_rule)
