"""What clients send with a message, checked: content, topic, address and client name.

``parse_send_target`` reads POST /messages' ``type``/``to``/``topic`` in every form Zulip
clients use; ``normalize_content`` and ``normalize_topic`` give the stored forms. The
sending itself is ``actions/messages.do_send_message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from palaver.lib.channels import first_unprintable
from palaver.lib.exceptions import JsonableError
from palaver.lib.limits import MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH
from palaver.models.topic_names import EMPTY_TOPIC_ALIASES

# A wildcard mention notifying more people than this needs can_mention_many_users_group.
WILDCARD_MENTION_THRESHOLD = 15


_USER_AGENT_NAME = re.compile(r"^([^/ ]*[^0-9/(]*)")


def truncate(text: str, limit: int, marker: str) -> str:
    """``text`` cut to ``limit`` characters, ``marker`` included, where it is longer."""
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


def normalize_content(content: str) -> str:
    """Message content as stored: trimmed, and cut (not refused) past the length limit."""
    content = content.rstrip().lstrip("\n")
    if not content:
        raise JsonableError("Message must not be empty")
    if "\x00" in content:
        raise JsonableError("Message must not contain null bytes")
    return truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]")


def normalize_topic(topic: str) -> str:
    """A topic as stored: trimmed, printable, shortened with "..." past the length limit."""
    topic = topic.strip()
    position = first_unprintable(topic)
    if position is not None:
        raise JsonableError(f"Invalid character in topic, at position {position}!")
    if topic in EMPTY_TOPIC_ALIASES:
        return ""
    return truncate(topic, MAX_TOPIC_LENGTH, "...")


def client_name_from_user_agent(user_agent: str) -> str:
    """The "client" shown on messages: the product name a User-Agent starts with."""
    match = _USER_AGENT_NAME.match(user_agent.strip())
    name = match.group(1).strip() if match else ""
    return name[:30] or "Unspecified"


@dataclass(frozen=True)
class ChannelTarget:
    """A channel message's address, named by the client."""

    topic: str
    stream_id: int | None = None
    stream_name: str | None = None


@dataclass(frozen=True)
class DirectTarget:
    """A direct message's other participants, by ID or by email."""

    user_ids: tuple[int, ...] = ()
    emails: tuple[str, ...] = ()


SendTarget = ChannelTarget | DirectTarget


def parse_send_target(message_type: str, to: str | int | list[int | str], topic: str | None) -> SendTarget:
    """Read POST /messages' ``type``/``to``/``topic`` as Zulip clients send them."""
    if message_type in ("stream", "channel"):
        if isinstance(to, list):
            # Legacy clients send a one-element JSON list holding the name or ID.
            if len(to) != 1:
                raise JsonableError("Expected exactly one channel")
            to = to[0]
        if topic is None:
            raise JsonableError("Missing topic")
        if isinstance(to, int):
            return ChannelTarget(topic=topic, stream_id=to)
        name = to.strip()
        if not name:
            raise JsonableError("Missing channel")
        return ChannelTarget(topic=topic, stream_name=name)
    if message_type in ("private", "direct"):
        if isinstance(to, int):
            return DirectTarget(user_ids=(to,))
        if isinstance(to, str):
            # A comma-separated list of emails (the oldest form clients use).
            to = [part for part in (p.strip() for p in to.split(",")) if part]
        if not to:
            raise JsonableError("Message must have recipients")
        if all(isinstance(item, int) for item in to):
            return DirectTarget(user_ids=tuple(dict.fromkeys(int(i) for i in to)))
        if all(isinstance(item, str) for item in to):
            emails = tuple(dict.fromkeys(str(e).strip() for e in to if str(e).strip()))
            if not emails:
                raise JsonableError("Message must have recipients")
            return DirectTarget(emails=emails)
        raise JsonableError("Recipient lists may contain emails or user IDs, but not both.")
    raise JsonableError("Invalid message type")
