"""Events about what a user writes before sending: drafts, saved snippets, scheduled messages, reminders."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none

# drafts -------------------------------------------------------------------------------


class DraftPayload(Payload):
    id: int
    type: Literal["", "stream", "private"]
    to: list[int]
    topic: str
    content: str
    timestamp: int


class DraftsAdd(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["add"] = "add"
    drafts: list[DraftPayload]


class DraftsUpdate(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["update"] = "update"
    draft: DraftPayload


class DraftsRemove(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["remove"] = "remove"
    draft_id: int


# saved_snippets -----------------------------------------------------------------------


class SavedSnippetPayload(Payload):
    id: int
    title: str
    content: str
    date_created: int


class SavedSnippetsAdd(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["add"] = "add"
    saved_snippet: SavedSnippetPayload


class SavedSnippetsUpdate(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["update"] = "update"
    saved_snippet: SavedSnippetPayload


class SavedSnippetsRemove(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["remove"] = "remove"
    saved_snippet_id: int


# scheduled_messages and reminders -------------------------------------------------------


class ScheduledMessagePayload(Payload):
    scheduled_message_id: int
    type: Literal["stream", "private"]
    # A channel ID for "stream", the other users' IDs for "private".
    to: int | list[int]
    # Only for "stream", as in Zulip.
    topic: str | None = omit_none()
    content: str
    rendered_content: str
    scheduled_delivery_timestamp: int
    failed: bool


class ScheduledMessagesAdd(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["add"] = "add"
    scheduled_messages: list[ScheduledMessagePayload]


class ScheduledMessagesUpdate(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["update"] = "update"
    scheduled_message: ScheduledMessagePayload


class ScheduledMessagesRemove(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["remove"] = "remove"
    scheduled_message_id: int


class ReminderPayload(Payload):
    reminder_id: int
    type: Literal["private"]
    to: list[int]
    content: str
    rendered_content: str
    scheduled_delivery_timestamp: int
    failed: bool
    reminder_target_message_id: int | None
    # The interface's Reminder record names the message and note directly.
    message_id: int | None
    note: str


class RemindersAdd(Event):
    type: Literal["reminders"] = "reminders"
    op: Literal["add"] = "add"
    reminders: list[ReminderPayload]


class RemindersRemove(Event):
    type: Literal["reminders"] = "reminders"
    op: Literal["remove"] = "remove"
    reminder_id: int
