"""The entry points: ``render_message`` for message content, ``render_markdown`` for descriptions and
profile fields.
"""

from __future__ import annotations

from typing import Any

from palaver.lib.markdown.contract import MarkdownContext, RenderResult
from palaver.lib.markdown.parser import zulip_parser
from palaver.lib.markdown.sanitize import sanitize
from palaver.lib.markdown.state import ENV_KEY, Collector

# -- entry points ---------------------------------------------------------------------------------


def render_markdown(text: str) -> str:
    """Render a description or profile field: Markdown and emoji, no mentions."""
    env: dict[str, Any] = {ENV_KEY: Collector(None)}
    return sanitize(zulip_parser().render(text, env))


def is_me_message(content: str) -> bool:
    return content.startswith("/me ")


def render_message(content: str, ctx: MarkdownContext) -> RenderResult:
    collector = Collector(ctx)
    html = sanitize(zulip_parser().render(content, {ENV_KEY: collector}))
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
