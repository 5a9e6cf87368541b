"""Inline rules: mentions, channel links, math, emoji, bare URLs and global times."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_inline import StateInline

from palaver.lib.emoji import ZULIP_EXTRA_EMOJI_NAMES, emoji_code_for_name
from palaver.lib.markdown.contract import MarkdownContext, UserRef
from palaver.lib.markdown.state import Collector, collector_of, emoji_html, push_html
from palaver.lib.markdown.syntax import (
    CHANNEL_LINK,
    EMOJI_SHORTCODE,
    GROUP_MENTION,
    ID_SYNTAX,
    INLINE_MATH,
    MESSAGE_LINK_TOPIC,
    STREAM_WILDCARDS,
    TOPIC_WILDCARDS,
    URL_BODY,
    URL_SCHEME_BEFORE,
    USER_MENTION,
    at_word_start,
)
from palaver.lib.markdown.urls import channel_narrow_url, encode_hash_component, trim_url
from palaver.lib.math import tex_to_html

_GLOBAL_TIME = re.compile(r"<time:([^>\n]*)>")


# -- inline rules ------------------------------------------------------------------------------


def _user_mention_html(collector: Collector, text: str, silent: bool) -> str | None:
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
    id_match = ID_SYNTAX.fullmatch(text)
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


def _group_mention_html(collector: Collector, text: str, silent: bool) -> str | None:
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
    if src[pos] != "@" or not at_word_start(src, pos):
        return False
    collector = collector_of(state.env)
    if silent:
        # A look-ahead (e.g. while scanning a link label) must not record mentions.
        collector = Collector(collector.ctx)
    html: str | None = None
    match = USER_MENTION.match(src, pos, state.posMax)
    if match is not None:
        html = _user_mention_html(collector, match.group(2), bool(match.group(1)))
    else:
        match = GROUP_MENTION.match(src, pos, state.posMax)
        if match is not None:
            html = _group_mention_html(collector, match.group(2), bool(match.group(1)))
    if match is None or html is None:
        return False
    if not silent:
        push_html(state, html)
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
    message_match = MESSAGE_LINK_TOPIC.fullmatch(topic)
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
    if src[pos] != "#" or state.linkLevel > 0 or not at_word_start(src, pos):
        return False
    ctx = collector_of(state.env).ctx
    match = CHANNEL_LINK.match(src, pos, state.posMax)
    if ctx is None or match is None:
        return False
    html = _channel_link_html(ctx, match.group(1))
    if html is None:
        return False
    if not silent:
        push_html(state, html)
    state.pos = match.end()
    return True


def _math_html(tex: str, display: bool) -> str:
    return tex_to_html(tex, display)  # MathML with the TeX as annotation (lib/math.py)


def _inline_math_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "$" or (pos > 0 and src[pos - 1] == "$"):
        return False
    match = INLINE_MATH.match(src, pos, state.posMax)
    if match is None:
        return False
    if not silent:
        push_html(state, _math_html(match.group(1), display=False))
    state.pos = match.end()
    return True


def _emoji_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != ":" or (pos > 0 and (src[pos - 1].isalnum() or src[pos - 1] == "_")):
        return False
    match = EMOJI_SHORTCODE.match(src, pos, state.posMax)
    if match is None:
        return False
    name = match.group(1)
    code = name if name in ZULIP_EXTRA_EMOJI_NAMES else emoji_code_for_name(name)
    if code is None:
        return False
    if not silent:
        push_html(state, emoji_html(name, code))
    state.pos = match.end()
    return True


def _bare_url_rule(state: StateInline, silent: bool) -> bool:
    """Link URLs written as plain text, before emphasis can see their ``_`` and ``*``."""
    src, pos = state.src, state.pos
    if state.linkLevel > 0 or not src.startswith("://", pos):
        return False
    scheme_match = URL_SCHEME_BEFORE.search(state.pending)
    if scheme_match is None:
        return False
    scheme = scheme_match.group(1)
    body = URL_BODY.match(src, pos, state.posMax)
    if body is None:
        return False
    url = trim_url(scheme + body.group(0))
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
        push_html(state, f'<time datetime="{stamp}">{escapeHtml(text)}</time>')
    state.pos = match.end()
    return True


def install_inline_rules(md: MarkdownIt) -> None:
    """Add the inline rules to ``md``: bare URLs before emphasis sees their ``_``, then emoji,
    mentions, channel links and math after plain text; global times before autolinks."""
    md.inline.ruler.after("text", "palaver_bare_url", _bare_url_rule)
    md.inline.ruler.after("palaver_bare_url", "palaver_emoji", _emoji_rule)
    md.inline.ruler.after("palaver_emoji", "palaver_mention", _mention_rule)
    md.inline.ruler.after("palaver_mention", "palaver_channel_link", _channel_link_rule)
    md.inline.ruler.after("palaver_channel_link", "palaver_inline_math", _inline_math_rule)
    md.inline.ruler.before("autolink", "palaver_global_time", _global_time_rule)
