"""Default channel groups: reads, checks, and the API shape."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row
from palaver.models.default_stream_groups import DefaultStreamGroup, DefaultStreamGroupChannel

MAX_NAME_LENGTH = 60


def check_group_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Invalid default channel group name ''")
    if len(name) > MAX_NAME_LENGTH:
        raise JsonableError(f"Default channel group name too long (limit: {MAX_NAME_LENGTH} characters)")
    return name


def get_group_by_name(session: Session, realm_id: int, name: str) -> DefaultStreamGroup | None:
    return session.scalar(
        select(DefaultStreamGroup).where(
            DefaultStreamGroup.realm_id == realm_id, DefaultStreamGroup.name == name
        )
    )


def access_group(session: Session, realm_id: int, group_id: int) -> DefaultStreamGroup:
    group = get_row(session, DefaultStreamGroup, group_id)
    if group is None or group.realm_id != realm_id:
        raise JsonableError(f"Default channel group with id '{group_id}' does not exist.")
    return group


def group_stream_ids(session: Session, group_id: int) -> set[int]:
    return set(
        session.scalars(
            select(DefaultStreamGroupChannel.stream_id).where(DefaultStreamGroupChannel.group_id == group_id)
        )
    )


def format_default_stream_groups(session: Session, realm_id: int) -> list[dict[str, Any]]:
    groups = list(
        session.scalars(
            select(DefaultStreamGroup)
            .where(DefaultStreamGroup.realm_id == realm_id)
            .order_by(DefaultStreamGroup.name)
        )
    )
    streams: dict[int, list[int]] = defaultdict(list)
    if groups:
        rows = session.execute(
            select(DefaultStreamGroupChannel.group_id, DefaultStreamGroupChannel.stream_id)
            .where(DefaultStreamGroupChannel.group_id.in_([g.id for g in groups]))
            .order_by(DefaultStreamGroupChannel.stream_id)
        )
        for group_id, stream_id in rows:
            streams[group_id].append(stream_id)
    return [
        {"id": g.id, "name": g.name, "description": g.description, "streams": streams[g.id]} for g in groups
    ]
