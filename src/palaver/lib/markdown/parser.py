"""The markdown-it parser with every Zulip rule installed."""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt

from palaver.lib.markdown.blocks import install_block_rules
from palaver.lib.markdown.inline import install_inline_rules
from palaver.lib.markdown.links import install_link_rules
from palaver.lib.markdown.renderer import install_render_rules

_URL_SCHEMES = frozenset({"http", "https", "mailto", "ftp"})
_SCHEME_PREFIX = re.compile(r"([a-zA-Z][a-zA-Z0-9+.\-]*):")


class _ZulipMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        # Links may be relative or use a few schemes; markdown-it's own check only
        # excludes a list of dangerous ones, so <foo:bar> would become a link.
        scheme = _SCHEME_PREFIX.match(url.strip())
        return scheme is None or scheme.group(1).lower() in _URL_SCHEMES


@cache
def zulip_parser() -> MarkdownIt:
    """The one parser of the process (built on first use): CommonMark, tables,
    strikethrough and Zulip's rules; render with an env holding a ``Collector``."""
    md = _ZulipMarkdownIt(
        "commonmark", {"html": False, "linkify": False, "breaks": True, "typographer": False}
    )
    md.enable(["table", "strikethrough"])
    install_inline_rules(md)
    install_block_rules(md)
    install_link_rules(md)
    install_render_rules(md)
    return md
