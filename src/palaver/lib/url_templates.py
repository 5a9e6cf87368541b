"""RFC 6570 URL template syntax checks, for linkifiers and code playgrounds.

The Markdown renderer expands templates of levels 1-3 (``lib.markdown.urls.expand_url_template``);
templates are checked here when they are saved, so a template the renderer cannot expand
never reaches it. Level-4 value modifiers (``{var:3}``, ``{var*}``) are refused for that
reason, as are the operators RFC 6570 reserves for future extensions (``= , ! @ |``).
"""

from __future__ import annotations

import re

_OPERATORS = frozenset("+#./;?&")
_RESERVED_OPERATORS = frozenset("=,!@|")
# varname = varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
_PCT_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
# Characters RFC 6570 does not allow in a template's literal parts.
_FORBIDDEN_LITERALS = frozenset(" \"'<>\\^`{|}")


class InvalidUrlTemplateError(ValueError):
    pass


def url_template_variables(template: str) -> list[str]:
    """The variable names of a template, in order; raises ``InvalidUrlTemplateError``."""
    names: list[str] = []
    pos = 0
    while pos < len(template):
        char = template[pos]
        if char == "{":
            end = template.find("}", pos + 1)
            if end == -1:
                raise InvalidUrlTemplateError(template)
            names.extend(_expression_variables(template[pos + 1 : end]))
            pos = end + 1
            continue
        if char == "%":
            if _PCT_ENCODED.match(template, pos) is None:
                raise InvalidUrlTemplateError(template)
            pos += 3
            continue
        if char in _FORBIDDEN_LITERALS or ord(char) < 0x20 or ord(char) == 0x7F:
            raise InvalidUrlTemplateError(template)
        pos += 1
    return names


def _expression_variables(expression: str) -> list[str]:
    if expression and expression[0] in _RESERVED_OPERATORS:
        raise InvalidUrlTemplateError(expression)
    if expression and expression[0] in _OPERATORS:
        expression = expression[1:]
    names = expression.split(",")
    for name in names:
        if _VARNAME.fullmatch(name) is None:
            raise InvalidUrlTemplateError(expression)
    return names
