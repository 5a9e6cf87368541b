"""Block rules: Zulip's ```quote, ```spoiler and ```math fenced blocks."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

_CONTAINER_LANGS = frozenset({"quote", "spoiler"})
_MATH_LANGS = frozenset({"math", "latex", "tex"})


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


def install_block_rules(md: MarkdownIt) -> None:
    """Add the quote, spoiler and math fences to ``md``, ahead of markdown-it's own fences."""
    md.block.ruler.before(
        "fence",
        "palaver_zulip_block",
        _zulip_block_rule,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
