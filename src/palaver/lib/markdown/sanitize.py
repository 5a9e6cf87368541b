"""The allow-list every rendered HTML passes through (nh3): exactly the tags, attributes and classes
the rules emit, so a bug in a rule cannot become an injection.
"""

from __future__ import annotations

from functools import cache

import nh3

from palaver.lib.emoji import emoji_table
from palaver.lib.math import MATHML_ATTRIBUTES, MATHML_FIXED_VALUES, MATHML_TAGS

# -- sanitizing ----------------------------------------------------------------------------------

_ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "a", "span", "div", "img",
    "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "time", "video", "audio",
    "h1", "h2", "h3", "h4", "h5", "h6",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "data-stream-id"},
    "span": {"data-user-id", "data-user-group-id", "aria-label", "title"},
    "div": {"data-code-language"},
    "img": {"src", "alt", "title"},
    "time": {"datetime"},
    "video": {"src"},
    "audio": {"src", "title", "controls"},
    "ol": {"start"},
}
# Attributes that only ever take one value.
_FIXED_ATTRIBUTE_VALUES = {
    "a": {"target": {"_blank"}},
    "span": {"role": {"img"}},
    "div": {"aria-hidden": {"true"}},
    "video": {"preload": {"metadata"}},
    "audio": {"preload": {"metadata"}},
}
_ALLOWED_CLASSES = {
    "a": {"stream", "stream-topic", "message-link"},
    "span": {
        "user-mention", "user-group-mention", "topic-mention", "channel-wildcard-mention", "silent",
        "emoji", "katex", "katex-display", "tex-error",
    },
    "div": {
        "codehilite", "spoiler-block", "spoiler-header", "spoiler-content", "message_inline_image",
        "message_inline_video",
    },
    "img": {"emoji", "inline-image"},
    # Column alignment (markdown/renderer.py): a class, as the CSP allows no inline style.
    "th": {"text-align-left", "text-align-center", "text-align-right"},
    "td": {"text-align-left", "text-align-center", "text-align-right"},
}  # fmt: skip


@cache
def _cleaner() -> nh3.Cleaner:
    # One emoji-<code> class per known emoji: a fixed list nh3 checks without calling back
    # into Python, which would cost more than the rest of sanitizing.
    emoji_classes = {f"emoji-{code}" for code in emoji_table().code_to_name}
    # Pygments' token classes ("k", "nf", "s2"…) in highlighted code blocks.
    from pygments.token import STANDARD_TYPES  # noqa: PLC0415

    token_classes = {name for name in STANDARD_TYPES.values() if name}
    classes = {**_ALLOWED_CLASSES, "span": _ALLOWED_CLASSES["span"] | emoji_classes | token_classes}
    return nh3.Cleaner(
        tags=_ALLOWED_TAGS | MATHML_TAGS,
        attributes={**_ALLOWED_ATTRIBUTES, **MATHML_ATTRIBUTES},
        tag_attribute_values={**_FIXED_ATTRIBUTE_VALUES, **MATHML_FIXED_VALUES},
        allowed_classes=classes,
        url_schemes={"http", "https", "mailto", "ftp"},
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def sanitize(html: str) -> str:
    return str(_cleaner().clean(html)).strip()
