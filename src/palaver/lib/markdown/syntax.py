"""The patterns of Zulip's syntax, and the names and IDs a message's content may mention (looked up
before rendering, so the context holds only those).
"""

from __future__ import annotations

import re

# -- syntax ------------------------------------------------------------------------------

# Zulip only recognises mentions, channel links and linkifiers at the start of a word:
# after whitespace, an opening quote or bracket, a comma or colon, or at the start.
_BOUNDARY_CHARS = frozenset(" \t\n'\"(,:<")

# @**Full Name** and @_**Full Name** (silent); @*group* and @_*group*; #**channel>topic**.
USER_MENTION = re.compile(r"@(_?)\*\*([^*\n]+)\*\*")
GROUP_MENTION = re.compile(r"@(_?)\*([^*\n]+)\*")
CHANNEL_LINK = re.compile(r"#\*\*([^*\n]+)\*\*")
# "Name|123" inside a mention; "channel@123" inside a message link's topic part.
ID_SYNTAX = re.compile(r"(.*)\|(\d+)")
MESSAGE_LINK_TOPIC = re.compile(r"(.*)@(\d+)")
# $$tex$$ on one line; :shortcode:; a URL's scheme just before "://", and the rest of it.
INLINE_MATH = re.compile(r"\$\$([^\n$](?:\\\$|[^$\n])*?)\$\$(?!\$)")
EMOJI_SHORTCODE = re.compile(r":([a-z0-9_+\-]+):")
URL_SCHEME_BEFORE = re.compile(r"(?:^|[^a-z0-9.+\-])(https?|ftp)$", re.IGNORECASE)
URL_BODY = re.compile(r"://[^\s<>\"]+")
# Punctuation that ends a sentence rather than a bare URL (trimmed from its end).
UNBALANCED_TRAILERS = ".,:;!?'\"*"

STREAM_WILDCARDS = frozenset({"all", "everyone", "stream", "channel"})
TOPIC_WILDCARDS = frozenset({"topic"})


def at_word_start(src: str, pos: int) -> bool:
    """Whether ``pos`` starts a word, where mentions, channel links and linkifiers may begin."""
    return pos == 0 or src[pos - 1] in _BOUNDARY_CHARS or src[pos - 1].isspace()


def possible_mention_names(content: str) -> set[str]:
    """Names that ``@**…**`` / ``@_**…**`` may mention, as typed (match case-insensitively).

    Wildcards are left out, and for ``@**Name|123**`` only the name is given (the ID is
    in ``possible_mention_ids``). A superset: it does not skip code blocks.
    """
    names: set[str] = set()
    for match in USER_MENTION.finditer(content):
        text = match.group(2)
        id_match = ID_SYNTAX.fullmatch(text)
        if id_match is not None:
            text = id_match.group(1)
        if text and text.lower() not in STREAM_WILDCARDS | TOPIC_WILDCARDS:
            names.add(text)
    return names


def possible_mention_ids(content: str) -> set[int]:
    """User IDs named by the ``@**Name|123**`` syntax."""
    ids: set[int] = set()
    for match in USER_MENTION.finditer(content):
        id_match = ID_SYNTAX.fullmatch(match.group(2))
        if id_match is not None:
            ids.add(int(id_match.group(2)))
    return ids


def possible_group_names(content: str) -> set[str]:
    return {m.group(2) for m in GROUP_MENTION.finditer(content)}


def possible_channel_names(content: str) -> set[str]:
    return {m.group(1).split(">", 1)[0] for m in CHANNEL_LINK.finditer(content)}
