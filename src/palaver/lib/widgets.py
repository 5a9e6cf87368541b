"""Widgets: polls (``/poll``) and to-do lists (``/todo``) carried by submessages.

A message whose content starts with ``/poll`` or ``/todo`` gets a first submessage, written
when it is sent, holding ``{"widget_type": ..., "extra_data": ...}``; clients build the widget
from it and from the later submessages (votes, new options, tasks, strikes) that users add
with POST /submessage. The shapes of those are what Zulip's clients send and read.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Protocol

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.submessages import SubMessage

WIDGET_TYPES = ("poll", "todo")
# A leading list marker ("- ", "* ") on an option or task line.
_LIST_MARKER = re.compile(r"^[-*]\s*")


def _item_lines(lines: list[str]) -> list[str]:
    items = []
    for line in lines:
        item = _LIST_MARKER.sub("", line.strip(), count=1).strip()
        if item:
            items.append(item)
    return items


def widget_for_content(content: str) -> tuple[str, dict[str, Any]] | None:
    """(widget_type, extra_data) for a message starting with /poll or /todo, else None."""
    command, _, rest = content.lstrip().partition("\n")
    word, _, title = command.partition(" ")
    if not word.startswith("/") or word[1:] not in WIDGET_TYPES:
        return None
    widget_type = word[1:]
    title = title.strip()
    items = _item_lines(rest.splitlines())
    if widget_type == "poll":
        return widget_type, {"question": title, "options": items}
    tasks = []
    for item in items:
        task, _, desc = item.partition(":")
        tasks.append({"task": task.strip(), "desc": desc.strip()})
    return widget_type, {"task_list_title": title, "tasks": tasks}


class SubmessageColumns(Protocol):
    """A ``SubMessage`` or a row of its columns."""

    @property
    def id(self) -> int: ...
    @property
    def message_id(self) -> int: ...
    @property
    def sender_id(self) -> int: ...
    @property
    def msg_type(self) -> str: ...
    @property
    def content(self) -> str: ...


def format_submessage(row: SubmessageColumns) -> dict[str, Any]:
    return {
        "msg_type": row.msg_type,
        "content": row.content,
        "message_id": row.message_id,
        "sender_id": row.sender_id,
        "id": row.id,
    }


def submessages_by_message(session: Session, message_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    ids = sorted(set(message_ids))
    result: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if not ids:
        return result
    for row in session.scalars(
        select(SubMessage).where(SubMessage.message_id.in_(ids)).order_by(SubMessage.id)
    ):
        result[row.message_id].append(format_submessage(row))
    return result


def message_widget_type(session: Session, message_id: int) -> tuple[str | None, bool]:
    """The widget type of the message's first submessage, and whether it has any."""
    first = session.scalars(
        select(SubMessage.content).where(SubMessage.message_id == message_id).order_by(SubMessage.id).limit(1)
    ).first()
    if first is None:
        return None, False
    try:
        data = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None, True
    widget_type = data.get("widget_type") if isinstance(data, dict) else None
    return (widget_type if isinstance(widget_type, str) else None), True


# Validating what users add -------------------------------------------------------------------


def _require(data: dict[str, Any], widget: str, key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    # bool is an int in Python; an integer field must not take true/false.
    if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise JsonableError(f'{widget} data["{key}"] is missing or of the wrong type')
    return value


def check_widget_data(widget_type: str | None, data: Any, *, is_widget_author: bool) -> None:
    if widget_type not in WIDGET_TYPES:
        return
    if not isinstance(data, dict):
        raise JsonableError(f"{widget_type} data is not a dict")
    kind = data.get("type")
    if widget_type == "poll":
        if kind == "vote":
            _require(data, "poll", "key", str)
            if _require(data, "poll", "vote", int) not in (1, -1):
                raise JsonableError('poll data["vote"] must be 1 or -1')
        elif kind == "new_option":
            _require(data, "poll", "idx", int)
            _require(data, "poll", "option", str)
        elif kind == "question":
            _require(data, "poll", "question", str)
            if not is_widget_author:
                raise JsonableError("You can't edit a question unless you are the author.")
        else:
            raise JsonableError(f"Unknown type for poll data: {kind}")
        return
    if kind == "new_task":
        _require(data, "todo", "key", int)
        _require(data, "todo", "task", str)
        _require(data, "todo", "desc", str)
        _require(data, "todo", "completed", bool)
    elif kind == "strike":
        _require(data, "todo", "key", str)
    elif kind == "new_task_list_title":
        _require(data, "todo", "title", str)
        if not is_widget_author:
            raise JsonableError("You can't edit the task list title unless you are the author.")
    else:
        raise JsonableError(f"Unknown type for todo data: {kind}")
