"""Channel folder reads, validation and the folder objects clients receive."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.lib.channels import first_unprintable
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row
from palaver.lib.limits import MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH, MAX_CHANNEL_FOLDER_NAME_LENGTH
from palaver.models.channels import ChannelFolder
from palaver.models.names import name_key
from palaver.timeutil import to_timestamp


def check_channel_folder_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Channel folder name can't be empty.")
    if len(name) > MAX_CHANNEL_FOLDER_NAME_LENGTH:
        raise JsonableError(
            f"Channel folder name too long (limit: {MAX_CHANNEL_FOLDER_NAME_LENGTH} characters)."
        )
    position = first_unprintable(name)
    if position is not None:
        raise JsonableError(f"Invalid character in channel folder name, at position {position}.")
    return name


def check_channel_folder_description(description: str) -> str:
    description = description.strip()
    if len(description) > MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH:
        raise JsonableError(
            "Channel folder description too long "
            f"(limit: {MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH} characters)."
        )
    return description


def get_channel_folder(session: Session, realm_id: int, folder_id: int) -> ChannelFolder:
    folder = get_row(session, ChannelFolder, folder_id)
    if folder is None or folder.realm_id != realm_id:
        raise JsonableError("Invalid channel folder ID")
    return folder


def channel_folder_name_in_use(
    session: Session, realm_id: int, name: str, *, exclude_id: int | None = None
) -> bool:
    # The key the unique index holds (models/names.py), so this check and the index agree.
    query = select(ChannelFolder.id).where(
        ChannelFolder.realm_id == realm_id, ChannelFolder.name_key == name_key(name)
    )
    if exclude_id is not None:
        query = query.where(ChannelFolder.id != exclude_id)
    return session.scalar(query) is not None


def get_channel_folders(session: Session, realm_id: int, *, include_archived: bool) -> list[ChannelFolder]:
    query = select(ChannelFolder).where(ChannelFolder.realm_id == realm_id)
    if not include_archived:
        query = query.where(ChannelFolder.is_archived.is_(False))
    return list(session.scalars(query.order_by(ChannelFolder.order, ChannelFolder.id)))


def next_channel_folder_order(session: Session, realm_id: int) -> int:
    highest = session.scalar(select(func.max(ChannelFolder.order)).where(ChannelFolder.realm_id == realm_id))
    return 0 if highest is None else highest + 1


def format_channel_folder(folder: ChannelFolder) -> dict[str, Any]:
    return {
        "id": folder.id,
        "name": folder.name,
        "description": folder.description,
        "rendered_description": folder.rendered_description,
        "creator_id": folder.creator_id,
        "date_created": to_timestamp(folder.date_created),
        "is_archived": folder.is_archived,
        "order": folder.order,
    }
