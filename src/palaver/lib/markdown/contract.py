"""What the renderer is given and what it returns: the realm's users, groups, channels and linkifiers
(``MarkdownContext``), and ``RenderResult``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# -- public contract -------------------------------------------------------------------


@dataclass(frozen=True)
class UserRef:
    id: int
    full_name: str


@dataclass(frozen=True)
class GroupRef:
    id: int
    name: str


@dataclass(frozen=True)
class StreamRef:
    id: int
    name: str


@dataclass(frozen=True)
class LinkifierRef:
    """A realm linkifier: a regex with named groups and an RFC 6570 URL template."""

    pattern: str
    url_template: str


@dataclass(frozen=True)
class MarkdownContext:
    """What a message may refer to. Name-keyed mappings use lower-cased keys."""

    realm_url: str
    sender_id: int
    sender_full_name: str
    users_by_name: Mapping[str, UserRef]
    users_by_id: Mapping[int, UserRef]
    groups_by_name: Mapping[str, GroupRef]
    streams_by_name: Mapping[str, StreamRef]
    linkifiers: Sequence[LinkifierRef] = ()
    # How links to the empty-string topic show it (the realm's realm_empty_topic_display_name).
    empty_topic_display_name: str = "general chat"


@dataclass(frozen=True)
class RenderResult:
    html: str
    # Users and groups mentioned loudly; silent mentions (@_**…**) notify nobody.
    mentioned_user_ids: frozenset[int]
    mentioned_group_ids: frozenset[int]
    stream_wildcard: bool
    topic_wildcard: bool
    has_link: bool
    has_image: bool
    has_attachment: bool
    links: tuple[str, ...]
    is_me_message: bool
