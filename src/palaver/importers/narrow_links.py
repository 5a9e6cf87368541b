"""Narrow URL fragments brought from another server, renamed to the IDs the import gave.

Zulip's fragments name channels, people and messages by ID (``narrow/channel/20-Denmark``,
``narrow/dm/6,7-group``, ``narrow/near/1043``), and the import gives every one of them a new
ID: left as they were, a pinned view or a link in a message would open another channel or
nobody's conversation. A fragment is ``narrow`` followed by operator/operand pairs; an
operator may carry a ``-`` for negation; an ID-bearing operand starts with the ID (or a comma
list of them) and may go on with a slug, which is kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Lookup = Callable[[str], int | None]

_CHANNEL = frozenset({"channel", "stream"})
_PEOPLE = frozenset({"dm", "pm-with", "dm-including", "group-pm-with", "sender"})
# A message's place in a conversation: without it the view still opens the conversation.
_PLACE = frozenset({"near", "with"})
_MESSAGE = frozenset({"id"})
_LEADING_IDS = re.compile(r"(\d+(?:,\d+)*)(.*)", re.DOTALL)
# A fragment inside a message's Markdown or HTML: up to the first character a link ends at.
_IN_TEXT = re.compile(r"#(narrow/[^\s()\[\]<>\"'`]+)")


@dataclass(frozen=True)
class NewIds:
    """The source's ID (as text) to the new one, None when that thing was not imported."""

    channel: Lookup
    user: Lookup
    message: Lookup


def _operator(word: str) -> str:
    return word.removeprefix("-")


def _pairs(fragment: str) -> list[tuple[str, str]] | None:
    words = fragment.split("/")
    if words[0] != "narrow" or len(words) % 2 == 0:
        return None
    return list(zip(words[1::2], words[2::2], strict=True))


def _renamed(operand: str, lookup: Lookup) -> str | None:
    found = _LEADING_IDS.fullmatch(operand)
    if found is None:
        return operand  # a name or an email, as older URLs wrote it: no ID to rename
    new = [lookup(old) for old in found.group(1).split(",")]
    if any(i is None for i in new):
        return None
    return ",".join(str(i) for i in new) + found.group(2)


def remap_fragment(fragment: str, ids: NewIds, dropped: list[str] | None = None) -> str | None:
    """``fragment`` naming the new IDs; None when it names a channel, person or (``id``)
    message that was not imported. A fragment that is not a narrow is returned as it is.
    The source IDs of the messages whose place was left out go to ``dropped``."""
    pairs = _pairs(fragment)
    if pairs is None:
        return fragment
    words = ["narrow"]
    for operator, operand in pairs:
        kind = _operator(operator)
        if kind in _CHANNEL:
            new = _renamed(operand, ids.channel)
        elif kind in _PEOPLE:
            new = _renamed(operand, ids.user)
        elif kind in _PLACE | _MESSAGE:
            new = _renamed(operand, ids.message)
            if new is None and kind in _PLACE:
                if dropped is not None:
                    dropped.append(operand)
                continue
        else:
            new = operand
        if new is None:
            return None
        words += [operator, new]
    return "/".join(words)


def remap_links(text: str, ids: NewIds, dropped: list[str] | None = None) -> str:
    """Every narrow link in ``text`` renamed; one naming something not imported is left as it
    was. The source IDs of messages whose place was left out go to ``dropped``."""
    if "#narrow/" not in text:
        return text

    def replace(link: re.Match[str]) -> str:
        new = remap_fragment(link.group(1), ids, dropped)
        return link.group(0) if new is None else "#" + new

    return _IN_TEXT.sub(replace, text)
