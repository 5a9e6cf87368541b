"""What the rules share while rendering one message: the collector of mentions and links, and the
HTML they push.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from markdown_it.common.utils import escapeHtml
from markdown_it.rules_inline import StateInline

from palaver.lib.emoji import ZULIP_EXTRA_EMOJI_NAMES
from palaver.lib.markdown.contract import MarkdownContext

# -- rendering state -----------------------------------------------------------------------

# The key of the ``Collector`` in the env markdown-it hands every rule.
ENV_KEY = "palaver"


@dataclass
class Collector:
    """What rules learn while rendering one message."""

    ctx: MarkdownContext | None
    mentioned_user_ids: set[int] = field(default_factory=set)
    mentioned_group_ids: set[int] = field(default_factory=set)
    stream_wildcard: bool = False
    topic_wildcard: bool = False
    links: list[str] = field(default_factory=list)
    has_image: bool = False
    has_attachment: bool = False


def collector_of(env: MutableMapping[str, Any]) -> Collector:
    """The message's collector in ``env`` (an empty one, without context, if the caller gave none)."""
    found = env.get(ENV_KEY)
    if not isinstance(found, Collector):
        found = env[ENV_KEY] = Collector(None)
    return found


def push_html(state: StateInline, html: str) -> None:
    """Emit ready HTML as a token of its own (rendered verbatim; sanitized with the rest)."""
    token = state.push("palaver_html", "", 0)
    token.content = html


def emoji_html(name: str, code: str) -> str:
    """Zulip's HTML for one emoji: an image for Zulip's own, a styled span for Unicode."""
    if code in ZULIP_EXTRA_EMOJI_NAMES:
        src = f"/static/generated/emoji/images/emoji/unicode/{name}.png"
        return f'<img alt=":{name}:" class="emoji" src="{src}" title="{name}">'
    label = escapeHtml(name.replace("_", " "))
    return (
        f'<span aria-label="{label}" class="emoji emoji-{escapeHtml(code)}" role="img" '
        f'title="{label}">:{escapeHtml(name)}:</span>'
    )
