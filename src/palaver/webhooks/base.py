"""What every incoming-webhook integration shares: the request it reads, what it returns.

An integration is one function from a ``WebhookRequest`` (the raw body, headers and query
string) to a ``WebhookResult`` (the event type it recognised and the notifications to post).
It never touches the database: ``actions/webhooks.py`` authenticates, filters events and
sends the messages. Integrations raise ``UnsupportedEventError`` for events they do not
handle and ``MalformedPayloadError`` for bodies they cannot read; a ``KeyError``,
``TypeError`` or ``ValueError`` escaping one means a payload missing what the provider
documents, and is answered like a malformed body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from palaver.lib.exceptions import JsonableError


class UnsupportedEventError(JsonableError):
    code = "UNSUPPORTED_WEBHOOK_EVENT_TYPE"

    def __init__(self, integration: str, event_type: str) -> None:
        super().__init__(
            f"The '{event_type}' event isn't currently supported by the {integration} webhook",
            event_type=event_type,
        )


class MalformedPayloadError(JsonableError):
    code = "MALFORMED_WEBHOOK_PAYLOAD"

    def __init__(self, detail: str = "Malformed JSON") -> None:
        super().__init__(detail)


@dataclass(frozen=True)
class WebhookRequest:
    body: bytes
    # Lower-cased names.
    headers: Mapping[str, str]
    params: Mapping[str, str]

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            raise MalformedPayloadError() from None

    def json_object(self) -> dict[str, Any]:
        value = self.json()
        if not isinstance(value, dict):
            raise MalformedPayloadError("Malformed JSON: expected an object")
        return value

    def text(self) -> str:
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedPayloadError("The body is not UTF-8 text") from None


@dataclass(frozen=True)
class Notification:
    """One message to post. ``topic`` is the integration's choice; the URL's ``topic`` wins."""

    topic: str
    content: str


@dataclass(frozen=True)
class WebhookResult:
    # The event's type as ``only_events``/``exclude_events`` name it; None if not filterable.
    event_type: str | None
    notifications: Sequence[Notification] = ()


@dataclass(frozen=True)
class ConfigOption:
    """A URL parameter the integration understands, as /register describes it."""

    key: str
    label: str
    validator: str = "check_string"


Handler = Callable[[WebhookRequest], WebhookResult]


@dataclass(frozen=True)
class Integration:
    name: str
    display_name: str
    handler: Handler
    # None: the integration has no event types to filter on.
    all_event_types: tuple[str, ...] | None = None
    config_options: tuple[ConfigOption, ...] = field(default_factory=tuple)
    # Shown in docs: what the sender must be told beyond the URL.
    doc: str = ""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "all_event_types": list(self.all_event_types) if self.all_event_types is not None else None,
            "config_options": [
                {"key": o.key, "label": o.label, "validator": o.validator} for o in self.config_options
            ],
        }


# Formatting helpers shared by the integrations -----------------------------------------------


def link(text: str, url: str | None) -> str:
    """A Markdown link, or the bare text when there is no URL."""
    text = text.replace("[", "(").replace("]", ")")
    return f"[{text}]({url})" if url else text


def code_block(text: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so the payload cannot close it early.
    longest = 0
    run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def quote(text: str) -> str:
    return f"```quote\n{text.strip()}\n```"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def first_line(text: str | None, limit: int = 80) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
