"""How topic names are shown and looked up: the empty topic and resolved topics.

A channel message's topic is ``Message.subject``; ``""`` is the empty topic ("general
chat" for clients without the ``empty_topic_name`` capability).
"""

from __future__ import annotations

# How clients without the empty_topic_name capability see the empty topic; sending to a
# topic of this name (or Zulip's legacy "(no topic)") sends to the empty topic.
EMPTY_TOPIC_DISPLAY_NAME = "general chat"
EMPTY_TOPIC_ALIASES = frozenset({"(no topic)", EMPTY_TOPIC_DISPLAY_NAME})

# Resolving a topic renames it with this prefix.
RESOLVED_TOPIC_PREFIX = "✔ "


def topic_for_lookup(topic: str) -> str:
    """A topic named by a client (narrows, mark as read): the display name means ""."""
    topic = topic.strip()
    return "" if topic in EMPTY_TOPIC_ALIASES else topic


def display_topic(topic: str, allow_empty_topic_name: bool) -> str:
    return EMPTY_TOPIC_DISPLAY_NAME if topic == "" and not allow_empty_topic_name else topic
