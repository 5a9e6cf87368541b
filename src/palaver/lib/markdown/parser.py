"""The markdown-it parser with every Zulip rule installed."""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt

from palaver.lib.markdown.blocks import _zulip_block_rule
from palaver.lib.markdown.inline import (
    _bare_url_rule,
    _channel_link_rule,
    _emoji_rule,
    _global_time_rule,
    _inline_math_rule,
    _mention_rule,
)
from palaver.lib.markdown.links import _inline_children_rule, _preview_rule
from palaver.lib.markdown.renderer import (
    RenderRule,
    _render_code,
    _render_del_close,
    _render_del_open,
    _render_html,
    _render_math_block,
    _render_preview,
    _render_spoiler_close,
    _render_spoiler_content,
    _render_spoiler_open,
    _render_table_cell,
)

_URL_SCHEMES = frozenset({"http", "https", "mailto", "ftp"})
_SCHEME_PREFIX = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")


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
        "th_open": _render_table_cell,
        "td_open": _render_table_cell,
    }
    for name, rule in rules.items():
        md.add_render_rule(name, rule)
    return md
