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
