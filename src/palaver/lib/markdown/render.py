"""The entry points: ``render_message`` for message content, ``render_markdown`` for descriptions and
profile fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from palaver.lib.markdown.contract import MarkdownContext, RenderResult

if TYPE_CHECKING:
    from palaver.lib.markdown.state import Collector

# -- entry points ---------------------------------------------------------------------------------


def _html(text: str, collector: Collector) -> str:
    # markdown-it-py, nh3 and the rules (~4 MB) load with the first text rendered, not at
    # start-up: an idle server has rendered nothing.
    from palaver.lib.markdown.parser import zulip_parser  # noqa: PLC0415
    from palaver.lib.markdown.sanitize import sanitize  # noqa: PLC0415
    from palaver.lib.markdown.state import ENV_KEY  # noqa: PLC0415

    env: dict[str, Any] = {ENV_KEY: collector}
    return sanitize(zulip_parser().render(text, env))


def _collector(ctx: MarkdownContext | None) -> Collector:
    from palaver.lib.markdown.state import Collector  # noqa: PLC0415

    return Collector(ctx)


def render_markdown(text: str) -> str:
    """Render a description or profile field: Markdown and emoji, no mentions."""
    return _html(text, _collector(None))


def is_me_message(content: str) -> bool:
    return content.startswith("/me ")


def render_message(content: str, ctx: MarkdownContext) -> RenderResult:
    collector = _collector(ctx)
    html = _html(content, collector)
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
