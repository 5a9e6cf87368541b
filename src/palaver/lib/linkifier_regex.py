"""Linkifier patterns, compiled with RE2 so matching is linear in the text's length.

Python's ``re`` backtracks: an administrator's pattern such as ``(x+x+)+y`` takes time
exponential in the length of any message it is tried on, and messages render inside the
sender's write transaction. RE2 guarantees linear time and refuses the constructs that
would need backtracking (lookaround, backreferences), so a pattern is either accepted and
safe or refused when it is saved.

RE2 has no lookbehind, so the word-start condition Zulip applies to linkifiers (only after
the start of the text, white space or an opening delimiter, and not running into a word) is
written as ordinary groups around the pattern; the trailing character they consume is left
for the next search, which starts at the end of the linkifier's own match.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

# The group holding the linkifier's own match inside the wrapped expression.
MATCH_GROUP = "palaver_linkifier_match"
# \s is ASCII-only in RE2; \pZ adds the Unicode separators Python's \s knows.
_BEFORE = r"""(?:^|[\s\pZ'"(,:<])"""
_AFTER = r"(?:$|[^\pL\pN_])"


@cache
def _re2() -> tuple[Any, Any]:
    """The ``re2`` module and its options; RE2 (~2.5 MB with its library) loads with the first
    linkifier compiled, not at start-up."""
    import re2  # noqa: PLC0415

    options = re2.Options()
    # RE2 would print every refused pattern to stderr; the refusal is reported to the caller.
    options.log_errors = False
    return re2, options


class LinkifierPatternError(ValueError):
    """The pattern is not one RE2 accepts; the message says why."""


@dataclass(frozen=True)
class CompiledLinkifier:
    regex: Any  # re2's compiled pattern (the package ships no type information)
    match_index: int
    variables: frozenset[str]

    def finditer(self, text: str) -> Iterator[tuple[int, int, dict[str, str]]]:
        """Non-overlapping ``(start, end, named groups)`` of the pattern at word starts."""
        pos = 0
        while pos <= len(text):
            match = self.regex.search(text, pos)
            if match is None:
                return
            start, end = match.span(self.match_index)
            if end == start:
                pos = end + 1
                continue
            values = {k: v or "" for k, v in match.groupdict().items() if k != MATCH_GROUP}
            yield start, end, values
            pos = end


def _compile(source: str) -> Any:
    re2, options = _re2()
    try:
        return re2.compile(source, options=options)
    except re2.error as e:
        detail = e.args[0] if e.args else "invalid pattern"
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise LinkifierPatternError(str(detail)) from None


def check_pattern(pattern: str) -> frozenset[str]:
    """Validate a pattern on its own; returns its named groups (the URL template's variables)."""
    regex = _compile(pattern)
    if regex.fullmatch("") is not None:
        # A pattern matching nothing at all would link every position of every message.
        raise LinkifierPatternError("pattern matches the empty string")
    compile_linkifier(pattern)
    return frozenset(regex.groupindex)


@lru_cache(maxsize=512)
def compile_linkifier(pattern: str) -> CompiledLinkifier:
    """The pattern wrapped in the word-start conditions, ready to search messages."""
    regex = _compile(f"{_BEFORE}(?P<{MATCH_GROUP}>{pattern}){_AFTER}")
    variables = frozenset(name for name in regex.groupindex if name != MATCH_GROUP)
    return CompiledLinkifier(regex, regex.groupindex[MATCH_GROUP], variables)
