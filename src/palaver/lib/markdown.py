"""Zulip-flavoured Markdown, rendered to sanitized HTML.

Built on markdown-it-py's CommonMark parser with rules of our own for what Zulip adds:
mentions, channel links, emoji, math, spoiler and quote blocks, bare URLs and linkifiers.
The HTML matches what Zulip produces, since clients style and parse it (mentions by
``data-user-id``, spoilers by their classes). Whatever the rules emit then passes through
nh3 with an allow-list of exactly those tags, attributes and classes, so a bug in a rule
cannot become an injection.

``render_message`` renders message content for a realm (``MarkdownContext`` says who and
what can be mentioned); ``render_markdown`` renders descriptions and profile fields, where
emoji work but nothing is mentioned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any
from urllib.parse import quote, urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from palaver.lib.emoji import (
    ZULIP_EXTRA_EMOJI_NAMES,
    emoji_code_for_name,
    emoji_name_for_code,
    emoji_table,
    find_emoji_sequences,
)
from palaver.lib.linkifier_regex import LinkifierPatternError, compile_linkifier
from palaver.lib.math import MATHML_ATTRIBUTES, MATHML_FIXED_VALUES, MATHML_TAGS, tex_to_html

# -- public contract -------------------------------------------------------------------


@dataclass(frozen=True)
class UserRef:
    id: int
    full_name: str


@dataclass(frozen=True)
class GroupRef:
    id: int
    name: str


@dataclass(frozen=True)
class StreamRef:
    id: int
    name: str


@dataclass(frozen=True)
class LinkifierRef:
    """A realm linkifier: a regex with named groups and an RFC 6570 URL template."""

    pattern: str
    url_template: str


@dataclass(frozen=True)
class MarkdownContext:
    """What a message may refer to. Name-keyed mappings use lower-cased keys."""

    realm_url: str
    sender_id: int
    sender_full_name: str
    users_by_name: Mapping[str, UserRef]
    users_by_id: Mapping[int, UserRef]
    groups_by_name: Mapping[str, GroupRef]
    streams_by_name: Mapping[str, StreamRef]
    linkifiers: Sequence[LinkifierRef] = ()
    # How links to the empty-string topic show it (the realm's realm_empty_topic_display_name).
    empty_topic_display_name: str = "general chat"


@dataclass(frozen=True)
class RenderResult:
    html: str
    # Users and groups mentioned loudly; silent mentions (@_**…**) notify nobody.
    mentioned_user_ids: frozenset[int]
    mentioned_group_ids: frozenset[int]
    stream_wildcard: bool
    topic_wildcard: bool
    has_link: bool
    has_image: bool
    has_attachment: bool
    links: tuple[str, ...]
    is_me_message: bool


# -- syntax ------------------------------------------------------------------------------

# Zulip only recognises mentions, channel links and linkifiers at the start of a word:
# after whitespace, an opening quote or bracket, a comma or colon, or at the start.
_BOUNDARY_CHARS = frozenset(" \t\n'\"(,:<")

_USER_MENTION = re.compile(r"@(_?)\*\*([^*\n]+)\*\*")
_GROUP_MENTION = re.compile(r"@(_?)\*([^*\n]+)\*")
_CHANNEL_LINK = re.compile(r"#\*\*([^*\n]+)\*\*")
_ID_SYNTAX = re.compile(r"(.*)\|(\d+)")
_MESSAGE_LINK_TOPIC = re.compile(r"(.*)@(\d+)")
_INLINE_MATH = re.compile(r"\$\$([^\n$](?:\\\$|[^$\n])*?)\$\$(?!\$)")
_EMOJI_SHORTCODE = re.compile(r":([a-z0-9_+\-]+):")
_URL_SCHEME_BEFORE = re.compile(r"(?:^|[^a-z0-9.+\-])(https?|ftp)$", re.IGNORECASE)
_URL_BODY = re.compile(r"://[^\s<>\"]+")
_UNBALANCED_TRAILERS = ".,:;!?'\"*"

STREAM_WILDCARDS = frozenset({"all", "everyone", "stream", "channel"})
TOPIC_WILDCARDS = frozenset({"topic"})

_CONTAINER_LANGS = frozenset({"quote", "spoiler"})
_MATH_LANGS = frozenset({"math", "latex", "tex"})
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
_VIDEO_EXTENSIONS = (".mp4", ".webm", ".mov", ".m4v")
_AUDIO_EXTENSIONS = (".mp3", ".aac", ".flac", ".wav")
_MAX_PREVIEWS = 10
_URL_SCHEMES = frozenset({"http", "https", "mailto", "ftp"})
_SCHEME_PREFIX = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")
_GLOBAL_TIME = re.compile(r"<time:([^>\n]*)>")


def _at_word_start(src: str, pos: int) -> bool:
    return pos == 0 or src[pos - 1] in _BOUNDARY_CHARS or src[pos - 1].isspace()


def possible_mention_names(content: str) -> set[str]:
    """Names that ``@**…**`` / ``@_**…**`` may mention, as typed (match case-insensitively).

    Wildcards are left out, and for ``@**Name|123**`` only the name is given (the ID is
    in ``possible_mention_ids``). A superset: it does not skip code blocks.
    """
    names: set[str] = set()
    for match in _USER_MENTION.finditer(content):
        text = match.group(2)
        id_match = _ID_SYNTAX.fullmatch(text)
        if id_match is not None:
            text = id_match.group(1)
        if text and text.lower() not in STREAM_WILDCARDS | TOPIC_WILDCARDS:
            names.add(text)
    return names


def possible_mention_ids(content: str) -> set[int]:
    """User IDs named by the ``@**Name|123**`` syntax."""
    ids: set[int] = set()
    for match in _USER_MENTION.finditer(content):
        id_match = _ID_SYNTAX.fullmatch(match.group(2))
        if id_match is not None:
            ids.add(int(id_match.group(2)))
    return ids


def possible_group_names(content: str) -> set[str]:
    return {m.group(2) for m in _GROUP_MENTION.finditer(content)}


def possible_channel_names(content: str) -> set[str]:
    return {m.group(1).split(">", 1)[0] for m in _CHANNEL_LINK.finditer(content)}


# -- URLs --------------------------------------------------------------------------------


def encode_hash_component(text: str) -> str:
    """Zulip's narrow-URL encoding: percent-encoding with "." in place of "%"."""
    return quote(text, safe="").replace(".", "%2E").replace("%", ".")


def channel_narrow_url(stream: StreamRef) -> str:
    return f"/#narrow/channel/{stream.id}-{encode_hash_component(stream.name.replace(' ', '-'))}"


# RFC 6570 operators: (prefix, separator, named, value when empty, allows reserved chars)
_TEMPLATE_OPERATORS: Mapping[str, tuple[str, str, bool, str, bool]] = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}
_TEMPLATE_EXPRESSION = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,%]+)\}")
_PCT_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
_RESERVED = ":/?#[]@!$&'()*+,;="


def _encode_reserved(value: str) -> str:
    # Reserved expansion keeps reserved characters and existing %XX triplets as they are.
    pieces: list[str] = []
    last = 0
    for match in _PCT_TRIPLET.finditer(value):
        pieces.append(quote(value[last : match.start()], safe=_RESERVED))
        pieces.append(match.group(0))
        last = match.end()
    pieces.append(quote(value[last:], safe=_RESERVED))
    return "".join(pieces)


def expand_url_template(template: str, values: Mapping[str, str | None]) -> str:
    """Expand an RFC 6570 (levels 1-3) template; undefined variables expand to nothing."""

    def expand(match: re.Match[str]) -> str:
        prefix, separator, named, if_empty, reserved = _TEMPLATE_OPERATORS[match.group(1)]
        parts: list[str] = []
        for name in match.group(2).split(","):
            value = values.get(name)
            if value is None:
                continue
            encoded = _encode_reserved(value) if reserved else quote(value, safe="")
            if named:
                encoded = f"{name}={encoded}" if encoded else name + if_empty
            parts.append(encoded)
        return prefix + separator.join(parts) if parts else ""

    return _TEMPLATE_EXPRESSION.sub(expand, template)


def _linkifier_matches(text: str, linkifiers: Sequence[LinkifierRef]) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, url) matches; earlier linkifiers win ties."""
    found: list[tuple[int, int, int, str]] = []
    for order, linkifier in enumerate(linkifiers):
        try:
            compiled = compile_linkifier(linkifier.pattern)
        except LinkifierPatternError:
            continue  # saved before patterns were checked with RE2: it links nothing
        for start, end, values in compiled.finditer(text):
            found.append((start, order, end, expand_url_template(linkifier.url_template, values)))
    found.sort()
    chosen: list[tuple[int, int, str]] = []
    end_of_last = -1
    for start, _order, end, url in found:
        if start >= end_of_last:
            chosen.append((start, end, url))
            end_of_last = end
    return chosen


def _trim_url(url: str) -> str:
    """Drop trailing punctuation that ends the sentence rather than the URL."""
    while url:
        last = url[-1]
        if last in _UNBALANCED_TRAILERS or (last == ")" and url.count("(") < url.count(")")):
            url = url[:-1]
        else:
            break
    return url


_TOPIC_URL = re.compile(r"(?<![^\s'\"(,:<])(?:https?|ftp)://[^\s<>\"]+", re.IGNORECASE)


def topic_links(topic: str, linkifiers: Sequence[LinkifierRef]) -> list[dict[str, str]]:
    """Links for a topic name: linkifier matches and bare URLs, in order of position."""
    spans = [(start, end, url) for start, end, url in _linkifier_matches(topic, linkifiers)]
    for match in _TOPIC_URL.finditer(topic):
        url = _trim_url(match.group(0))
        if "://" in url and len(url) > url.index("://") + 3:
            start = match.start()
            spans.append((start, start + len(url), url))
    spans.sort(key=lambda s: s[0])
    result: list[dict[str, str]] = []
    end_of_last = -1
    for start, end, url in spans:
        if start >= end_of_last:
            result.append({"text": topic[start:end], "url": url})
            end_of_last = end
    return result


# -- rendering state -----------------------------------------------------------------------

_ENV_KEY = "palaver"


@dataclass
class _Collector:
    """What rules learn while rendering one message."""

    ctx: MarkdownContext | None
    mentioned_user_ids: set[int] = field(default_factory=set)
    mentioned_group_ids: set[int] = field(default_factory=set)
    stream_wildcard: bool = False
    topic_wildcard: bool = False
    links: list[str] = field(default_factory=list)
    has_image: bool = False
    has_attachment: bool = False


def _collector(env: MutableMapping[str, Any]) -> _Collector:
    found = env.get(_ENV_KEY)
    if not isinstance(found, _Collector):
        found = env[_ENV_KEY] = _Collector(None)
    return found


def _push_html(state: StateInline, html: str) -> None:
    token = state.push("palaver_html", "", 0)
    token.content = html


def _emoji_html(name: str, code: str) -> str:
    if code in ZULIP_EXTRA_EMOJI_NAMES:
        src = f"/static/generated/emoji/images/emoji/unicode/{name}.png"
        return f'<img alt=":{name}:" class="emoji" src="{src}" title="{name}">'
    label = escapeHtml(name.replace("_", " "))
    return (
        f'<span aria-label="{label}" class="emoji emoji-{escapeHtml(code)}" role="img" '
        f'title="{label}">:{escapeHtml(name)}:</span>'
    )


# -- inline rules ------------------------------------------------------------------------------


def _user_mention_html(collector: _Collector, text: str, silent: bool) -> str | None:
    ctx = collector.ctx
    if ctx is None:
        return None
    silent_class = " silent" if silent else ""
    shown = text if silent else f"@{text}"
    lowered = text.lower()
    if lowered in STREAM_WILDCARDS:
        collector.stream_wildcard |= not silent
        return (
            f'<span class="user-mention channel-wildcard-mention{silent_class}" '
            f'data-user-id="*">{escapeHtml(shown)}</span>'
        )
    if lowered in TOPIC_WILDCARDS:
        collector.topic_wildcard |= not silent
        return f'<span class="topic-mention{silent_class}">{escapeHtml(shown)}</span>'
    user: UserRef | None
    id_match = _ID_SYNTAX.fullmatch(text)
    if id_match is not None:
        user = ctx.users_by_id.get(int(id_match.group(2)))
        name = id_match.group(1)
        if user is not None and name and name.lower() != user.full_name.lower():
            user = None  # the name must agree with the ID when both are given
    else:
        user = ctx.users_by_name.get(lowered)
    if user is None:
        return None
    if not silent:
        collector.mentioned_user_ids.add(user.id)
    shown = user.full_name if silent else f"@{user.full_name}"
    return f'<span class="user-mention{silent_class}" data-user-id="{user.id}">{escapeHtml(shown)}</span>'


def _group_mention_html(collector: _Collector, text: str, silent: bool) -> str | None:
    if collector.ctx is None:
        return None
    group = collector.ctx.groups_by_name.get(text.lower())
    if group is None:
        return None
    if not silent:
        collector.mentioned_group_ids.add(group.id)
    shown = group.name if silent else f"@{group.name}"
    silent_class = " silent" if silent else ""
    return (
        f'<span class="user-group-mention{silent_class}" data-user-group-id="{group.id}">'
        f"{escapeHtml(shown)}</span>"
    )


def _mention_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "@" or not _at_word_start(src, pos):
        return False
    collector = _collector(state.env)
    if silent:
        # A look-ahead (e.g. while scanning a link label) must not record mentions.
        collector = _Collector(collector.ctx)
    html: str | None = None
    match = _USER_MENTION.match(src, pos, state.posMax)
    if match is not None:
        html = _user_mention_html(collector, match.group(2), bool(match.group(1)))
    else:
        match = _GROUP_MENTION.match(src, pos, state.posMax)
        if match is not None:
            html = _group_mention_html(collector, match.group(2), bool(match.group(1)))
    if match is None or html is None:
        return False
    if not silent:
        _push_html(state, html)
    state.pos = match.end()
    return True


def _channel_link_html(ctx: MarkdownContext, text: str) -> str | None:
    name, has_topic, topic = text.partition(">")
    stream = ctx.streams_by_name.get(name.lower())
    if stream is None:
        return None
    url = channel_narrow_url(stream)
    label = escapeHtml(stream.name)
    if not has_topic:
        return f'<a class="stream" data-stream-id="{stream.id}" href="{url}">#{label}</a>'
    message_id: str | None = None
    message_match = _MESSAGE_LINK_TOPIC.fullmatch(topic)
    if message_match is not None:
        topic, message_id = message_match.group(1), message_match.group(2)
    topic_url = f"{url}/topic/{encode_hash_component(topic)}"
    topic_label = escapeHtml(topic) if topic else f"<em>{escapeHtml(ctx.empty_topic_display_name)}</em>"
    if message_id is not None:
        # Zulip puts no space before "@" after the empty topic's <em> name.
        separator = " " if topic else ""
        return (
            f'<a class="message-link" href="{topic_url}/near/{message_id}">'
            f"#{label}&gt;{topic_label}{separator}@ \U0001f4ac</a>"
        )
    return (
        f'<a class="stream-topic" data-stream-id="{stream.id}" href="{topic_url}">'
        f"#{label}&gt;{topic_label}</a>"
    )


def _channel_link_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "#" or state.linkLevel > 0 or not _at_word_start(src, pos):
        return False
    ctx = _collector(state.env).ctx
    match = _CHANNEL_LINK.match(src, pos, state.posMax)
    if ctx is None or match is None:
        return False
    html = _channel_link_html(ctx, match.group(1))
    if html is None:
        return False
    if not silent:
        _push_html(state, html)
    state.pos = match.end()
    return True


def _math_html(tex: str, display: bool) -> str:
    return tex_to_html(tex, display)  # MathML with the TeX as annotation (lib/math.py)


def _inline_math_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "$" or (pos > 0 and src[pos - 1] == "$"):
        return False
    match = _INLINE_MATH.match(src, pos, state.posMax)
    if match is None:
        return False
    if not silent:
        _push_html(state, _math_html(match.group(1), display=False))
    state.pos = match.end()
    return True


def _emoji_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != ":" or (pos > 0 and (src[pos - 1].isalnum() or src[pos - 1] == "_")):
        return False
    match = _EMOJI_SHORTCODE.match(src, pos, state.posMax)
    if match is None:
        return False
    name = match.group(1)
    code = name if name in ZULIP_EXTRA_EMOJI_NAMES else emoji_code_for_name(name)
    if code is None:
        return False
    if not silent:
        _push_html(state, _emoji_html(name, code))
    state.pos = match.end()
    return True


def _bare_url_rule(state: StateInline, silent: bool) -> bool:
    """Link URLs written as plain text, before emphasis can see their ``_`` and ``*``."""
    src, pos = state.src, state.pos
    if state.linkLevel > 0 or not src.startswith("://", pos):
        return False
    scheme_match = _URL_SCHEME_BEFORE.search(state.pending)
    if scheme_match is None:
        return False
    scheme = scheme_match.group(1)
    body = _URL_BODY.match(src, pos, state.posMax)
    if body is None:
        return False
    url = _trim_url(scheme + body.group(0))
    if len(url) <= len(scheme) + 3:
        return False
    href = state.md.normalizeLink(url)
    if not state.md.validateLink(href):
        return False
    if not silent:
        state.pending = state.pending[: -len(scheme)]
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": href}
        token.markup = "linkify"
        token.info = "auto"
        token = state.push("text", "", 0)
        token.content = state.md.normalizeLinkText(url)
        token = state.push("link_close", "a", -1)
        token.markup = "linkify"
        token.info = "auto"
    state.pos += len(url) - len(scheme)
    return True


# -- block rules ---------------------------------------------------------------------------------


def _fence_at(state: StateBlock, line: int) -> tuple[str, str] | None:
    """The (markup, info) of a fence line, or None."""
    pos = state.bMarks[line] + state.tShift[line]
    maximum = state.eMarks[line]
    if pos + 3 > maximum or state.src[pos] not in "`~":
        return None
    marker = state.src[pos]
    end = state.skipCharsStr(pos, marker)
    if end - pos < 3:
        return None
    info = state.src[end:maximum]
    if marker == "`" and "`" in info:
        return None
    return state.src[pos:end], info.strip()


def _closes(fence: str, opener: str) -> bool:
    return fence[0] == opener[0] and len(fence) >= len(opener)


def _zulip_block_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """```quote, ```spoiler header and ```math blocks.

    Quote and spoiler blocks hold Markdown, including fenced blocks of their own: a fence
    with an info string opens a nested block and a bare fence closes the innermost one,
    so a code block inside a quote does not end the quote.
    """
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    opener = _fence_at(state, start_line)
    if opener is None:
        return False
    markup, info = opener
    words = info.split(maxsplit=1)
    lang = words[0].lower() if words else ""
    header = words[1] if len(words) > 1 else ""
    if lang not in _CONTAINER_LANGS and lang not in _MATH_LANGS:
        return False
    if silent:
        return True

    open_blocks: list[tuple[str, bool]] = []  # nested (markup, holds Markdown)
    next_line = start_line
    closed = False
    while True:
        next_line += 1
        if next_line >= end_line:
            break  # an unclosed block runs to the end of its parent
        if state.sCount[next_line] - state.blkIndent >= 4:
            continue
        fence = _fence_at(state, next_line)
        if fence is None:
            continue
        fence_markup, fence_info = fence
        top_markup, top_holds_markdown = (
            open_blocks[-1] if open_blocks else (markup, lang in _CONTAINER_LANGS)
        )
        if not fence_info:
            if _closes(fence_markup, top_markup):
                if not open_blocks:
                    closed = True
                    break
                open_blocks.pop()
        elif top_holds_markdown:
            inner_lang = fence_info.split()[0].lower()
            open_blocks.append((fence_markup, inner_lang in _CONTAINER_LANGS))

    if lang in _MATH_LANGS:
        token = state.push("palaver_math_block", "", 0)
        token.content = state.getLines(start_line + 1, next_line, state.sCount[start_line], True)
        token.map = [start_line, next_line]
        token.block = True
    else:
        old_line_max = state.lineMax
        # Keeps lazy paragraph continuation from running past the closing fence.
        state.lineMax = next_line
        if lang == "quote":
            token = state.push("blockquote_open", "blockquote", 1)
            token.markup = markup
            token.map = [start_line, next_line]
        else:
            token = state.push("palaver_spoiler_open", "div", 1)
            token.map = [start_line, next_line]
            if header:
                state.push("paragraph_open", "p", 1).map = [start_line, start_line + 1]
                inline = state.push("inline", "", 0)
                inline.content = header
                inline.map = [start_line, start_line + 1]
                inline.children = []
                state.push("paragraph_close", "p", -1)
            state.push("palaver_spoiler_content", "", 0)
        state.md.block.tokenize(state, start_line + 1, next_line)
        if lang == "quote":
            state.push("blockquote_close", "blockquote", -1).markup = markup
        else:
            state.push("palaver_spoiler_close", "div", -1)
        state.lineMax = old_line_max
    state.line = next_line + (1 if closed else 0)
    return True


# -- core rules: text, links and previews ---------------------------------------------------------


def _text_token(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _split_text(content: str, linkifiers: Sequence[LinkifierRef], in_link: bool) -> list[Token] | None:
    """Linkifier links and Unicode emoji within one text token; None when there are none."""
    spans: list[tuple[int, int, str, str]] = []
    if linkifiers and not in_link:
        spans.extend((s, e, "link", url) for s, e, url in _linkifier_matches(content, linkifiers))
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
            html.content = _emoji_html(name, value)
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


def _file_name(href: str) -> str:
    return urlsplit(href).path.rsplit("/", 1)[-1]


def _media_html(token: Token, src: str, collector: _Collector) -> str | None:
    """Markdown image syntax: only uploaded images and audio are shown as media."""
    kind = _upload_kind(src)
    alt = escapeHtml("".join(child.content for child in token.children or ()))
    if kind == "image":
        collector.has_image = True
        return f'<img alt="{alt}" class="inline-image" src="{escapeHtml(src)}">'
    if kind == "audio":
        name = escapeHtml(_file_name(src))
        return f'<audio controls preload="metadata" src="{escapeHtml(src)}" title="{name}"></audio>'
    return None


def _inline_children_rule(state: StateCore) -> None:
    """Per inline run: linkifiers, Unicode emoji, image syntax, and link bookkeeping."""
    collector = _collector(state.env)
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
    collector = _collector(state.env)
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


# -- renderer -----------------------------------------------------------------------------------

RenderRule = Callable[..., str]


def _render_html(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return tokens[idx].content


def _render_code(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    info = token.info.strip() if token.type == "fence" else ""
    lang = info.split()[0] if info else ""
    lang_attr = f' data-code-language="{escapeHtml(lang)}"' if lang else ""
    code = escapeHtml(token.content)
    return f'<div class="codehilite"{lang_attr}><pre><span></span><code>{code}</code></pre></div>\n'


def _render_del_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "<del>"


def _render_del_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "</del>"


def _render_math_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return f"<p>{_math_html(tokens[idx].content.strip(), display=True)}</p>\n"


def _render_spoiler_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return '<div class="spoiler-block"><div class="spoiler-header">\n'


def _render_spoiler_content(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return '</div><div class="spoiler-content" aria-hidden="true">\n'


def _render_spoiler_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "</div></div>\n"


def _render_preview(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    raw_href = str(tokens[idx].attrGet("href"))
    href = escapeHtml(raw_href)
    if tokens[idx].info == "video":
        return (
            f'<div class="message_inline_image message_inline_video"><a href="{href}">'
            f'<video preload="metadata" src="{href}"></video></a></div>\n'
        )
    title = escapeHtml(_file_name(raw_href))
    return (
        f'<div class="message_inline_image"><a href="{href}" title="{title}"><img src="{href}"></a></div>\n'
    )


def _global_time_rule(state: StateInline, silent: bool) -> bool:
    """<time:2024-05-01T10:00:00+02:00> (or a UNIX timestamp) shows in the reader's timezone."""
    src, pos = state.src, state.pos
    if src[pos] != "<":
        return False
    match = _GLOBAL_TIME.match(src, pos, state.posMax)
    if match is None:
        return False
    text = match.group(1)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            moment = datetime.fromtimestamp(float(text), tz=UTC)
        except (ValueError, OverflowError, OSError):
            return False  # shown as the literal text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        stamp = moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return False
    if not silent:
        _push_html(state, f'<time datetime="{stamp}">{escapeHtml(text)}</time>')
    state.pos = match.end()
    return True


class _ZulipMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        # Links may be relative or use a few schemes; markdown-it's own check only
        # excludes a list of dangerous ones, so <foo:bar> would become a link.
        scheme = _SCHEME_PREFIX.match(url.strip())
        return scheme is None or scheme.group(1).lower() in _URL_SCHEMES


@cache
def _parser() -> MarkdownIt:
    md = _ZulipMarkdownIt(
        "commonmark", {"html": False, "linkify": False, "breaks": True, "typographer": False}
    )
    md.enable(["table", "strikethrough"])
    md.inline.ruler.after("text", "palaver_bare_url", _bare_url_rule)
    md.inline.ruler.after("palaver_bare_url", "palaver_emoji", _emoji_rule)
    md.inline.ruler.after("palaver_emoji", "palaver_mention", _mention_rule)
    md.inline.ruler.after("palaver_mention", "palaver_channel_link", _channel_link_rule)
    md.inline.ruler.after("palaver_channel_link", "palaver_inline_math", _inline_math_rule)
    md.inline.ruler.before("autolink", "palaver_global_time", _global_time_rule)
    md.block.ruler.before(
        "fence",
        "palaver_zulip_block",
        _zulip_block_rule,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    md.core.ruler.after("text_join", "palaver_inline_children", _inline_children_rule)
    md.core.ruler.after("palaver_inline_children", "palaver_preview", _preview_rule)
    rules: dict[str, RenderRule] = {
        "palaver_html": _render_html,
        "fence": _render_code,
        "code_block": _render_code,
        # Zulip marks strikethrough as <del>, markdown-it as <s>.
        "s_open": _render_del_open,
        "s_close": _render_del_close,
        "palaver_math_block": _render_math_block,
        "palaver_spoiler_open": _render_spoiler_open,
        "palaver_spoiler_content": _render_spoiler_content,
        "palaver_spoiler_close": _render_spoiler_close,
        "palaver_preview": _render_preview,
    }
    for name, rule in rules.items():
        md.add_render_rule(name, rule)
    return md


# -- sanitizing ----------------------------------------------------------------------------------

_ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "a", "span", "div", "img",
    "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "time", "video", "audio",
    "h1", "h2", "h3", "h4", "h5", "h6",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "data-stream-id"},
    "span": {"data-user-id", "data-user-group-id", "aria-label", "title"},
    "div": {"data-code-language"},
    "img": {"src", "alt", "title"},
    "time": {"datetime"},
    "video": {"src"},
    "audio": {"src", "title", "controls"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}
# Attributes that only ever take one value.
_FIXED_ATTRIBUTE_VALUES = {
    "a": {"target": {"_blank"}},
    "span": {"role": {"img"}},
    "div": {"aria-hidden": {"true"}},
    "video": {"preload": {"metadata"}},
    "audio": {"preload": {"metadata"}},
}
_ALLOWED_CLASSES = {
    "a": {"stream", "stream-topic", "message-link"},
    "span": {
        "user-mention", "user-group-mention", "topic-mention", "channel-wildcard-mention", "silent",
        "emoji", "katex", "katex-display", "tex-error",
    },
    "div": {
        "codehilite", "spoiler-block", "spoiler-header", "spoiler-content", "message_inline_image",
        "message_inline_video",
    },
    "img": {"emoji", "inline-image"},
}  # fmt: skip


@cache
def _cleaner() -> nh3.Cleaner:
    # One emoji-<code> class per known emoji: a fixed list nh3 checks without calling back
    # into Python, which would cost more than the rest of sanitizing.
    emoji_classes = {f"emoji-{code}" for code in emoji_table().code_to_name}
    classes = {**_ALLOWED_CLASSES, "span": _ALLOWED_CLASSES["span"] | emoji_classes}
    return nh3.Cleaner(
        tags=_ALLOWED_TAGS | MATHML_TAGS,
        attributes={**_ALLOWED_ATTRIBUTES, **MATHML_ATTRIBUTES},
        tag_attribute_values={**_FIXED_ATTRIBUTE_VALUES, **MATHML_FIXED_VALUES},
        allowed_classes=classes,
        url_schemes={"http", "https", "mailto", "ftp"},
        link_rel="noopener noreferrer",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )


def sanitize(html: str) -> str:
    return str(_cleaner().clean(html)).strip()


# -- entry points ---------------------------------------------------------------------------------


def render_markdown(text: str) -> str:
    """Render a description or profile field: Markdown and emoji, no mentions."""
    env: dict[str, Any] = {_ENV_KEY: _Collector(None)}
    return sanitize(_parser().render(text, env))


def is_me_message(content: str) -> bool:
    return content.startswith("/me ")


def render_message(content: str, ctx: MarkdownContext) -> RenderResult:
    collector = _Collector(ctx)
    html = sanitize(_parser().render(content, {_ENV_KEY: collector}))
    return RenderResult(
        html=html,
        mentioned_user_ids=frozenset(collector.mentioned_user_ids),
        mentioned_group_ids=frozenset(collector.mentioned_group_ids),
        stream_wildcard=collector.stream_wildcard,
        topic_wildcard=collector.topic_wildcard,
        has_link=bool(collector.links),
        has_image=collector.has_image,
        has_attachment=collector.has_attachment,
        links=tuple(collector.links),
        is_me_message=is_me_message(content),
    )
