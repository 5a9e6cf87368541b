"""HTML for the token types the rules add, and markdown-it's that Zulip renders differently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

from palaver.lib.markdown.urls import file_name
from palaver.lib.math import tex_to_html

# -- renderer -----------------------------------------------------------------------------------

RenderRule = Callable[..., str]


def _render_html(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return tokens[idx].content


@lru_cache(maxsize=256)
def _lexer(lang: str) -> Any:
    """Pygments' lexer for a fence's language name or alias, or None."""
    # Imported on first use: most processes never render a code block.
    from pygments.lexers import get_lexer_by_name  # noqa: PLC0415
    from pygments.util import ClassNotFound  # noqa: PLC0415

    try:
        return get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _highlighted(code: str, lexer: Any) -> str:
    from pygments import highlight  # noqa: PLC0415
    from pygments.formatters import HtmlFormatter  # noqa: PLC0415

    return str(highlight(code, lexer, HtmlFormatter(nowrap=True)))


def _render_code(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # A fence naming a language Pygments knows is highlighted, as Zulip does: token spans with
    # Pygments' short classes, and data-code-language the lexer's name ("Python"); other
    # languages keep their name and plain text.
    token = tokens[idx]
    info = token.info.strip() if token.type == "fence" else ""
    lang = info.split()[0] if info else ""
    lexer = _lexer(lang) if lang else None
    if lexer is not None:
        lang_attr = f' data-code-language="{escapeHtml(lexer.name)}"'
        code = _highlighted(token.content, lexer)
    else:
        lang_attr = f' data-code-language="{escapeHtml(lang)}"' if lang else ""
        code = escapeHtml(token.content)
    return f'<div class="codehilite"{lang_attr}><pre><span></span><code>{code}</code></pre></div>\n'


def _render_del_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "<del>"


def _render_del_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "</del>"


def _render_math_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return f"<p>{tex_to_html(tokens[idx].content.strip(), display=True)}</p>\n"


def _render_spoiler_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return '<div class="spoiler-block"><div class="spoiler-header">\n'


def _render_spoiler_content(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return '</div><div class="spoiler-content" aria-hidden="true">\n'


def _render_spoiler_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return "</div></div>\n"


# markdown-it marks a column's alignment as an inline style; the pages' CSP
# (``style-src 'self'``) drops inline styles, so the alignment travels as a class the
# stylesheet styles (``.text-align-left`` etc. in web/static/css/app.css).
TABLE_ALIGN_CLASSES = {f"text-align:{side}": f"text-align-{side}" for side in ("left", "center", "right")}


def _render_table_cell(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    style = token.attrs.pop("style", None)
    align = TABLE_ALIGN_CLASSES.get(str(style)) if style is not None else None
    if align is not None:
        token.attrSet("class", align)
    return str(self.renderToken(tokens, idx, options, env))


def _render_preview(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    raw_href = str(tokens[idx].attrGet("href"))
    href = escapeHtml(raw_href)
    if tokens[idx].info == "video":
        return (
            f'<div class="message_inline_image message_inline_video"><a href="{href}">'
            f'<video preload="metadata" src="{href}"></video></a></div>\n'
        )
    title = escapeHtml(file_name(raw_href))
    return (
        f'<div class="message_inline_image"><a href="{href}" title="{title}"><img src="{href}"></a></div>\n'
    )


def install_render_rules(md: MarkdownIt) -> None:
    """Render the rules' token types, and markdown-it's where Zulip's HTML differs."""
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
