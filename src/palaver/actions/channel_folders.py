"""Creating and editing channel folders; every user of the realm hears of it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channel_folders import (
    channel_folder_name_in_use,
    check_channel_folder_description,
    check_channel_folder_name,
    format_channel_folder,
    next_channel_folder_order,
)
from palaver.lib.channels import metadata_access_user_ids
from palaver.lib.exceptions import JsonableError
from palaver.lib.markdown.render import render_markdown
from palaver.lib.realm import active_user_ids
from palaver.models import Realm
from palaver.models.channels import ChannelFolder, Stream
from palaver.models.requester import Requester


def do_create_channel_folder(
    session: Session, acting_user: Requester, *, name: str, description: str = ""
) -> ChannelFolder:
    name = check_channel_folder_name(name)
    description = check_channel_folder_description(description)
    realm_id = acting_user.realm_id
    with transaction(session) as tx:
        realm = session.get(Realm, realm_id)
        assert realm is not None
        tx.lock(realm)
        if channel_folder_name_in_use(session, realm_id, name):
            raise JsonableError("Channel folder name already in use")
        folder = ChannelFolder(
            realm_id=realm_id,
            name=name,
            description=description,
            rendered_description=render_markdown(description),
            creator_id=acting_user.user_id,
            order=next_channel_folder_order(session, realm_id),
        )
        session.add(folder)
        session.flush()
        payload = ev.ChannelFolderPayload(**format_channel_folder(folder))
        tx.send_event(
            realm_id, ev.ChannelFolderAdd(channel_folder=payload), active_user_ids(session, realm_id)
        )
    return folder


def do_update_channel_folder(
    session: Session,
    folder: ChannelFolder,
    *,
    name: str | None = None,
    description: str | None = None,
    is_archived: bool | None = None,
) -> None:
    """Apply the changes that differ from the folder's state, in one event."""
    with transaction(session) as tx:
        change: dict[str, str | bool] = {}
        if name is not None:
            name = check_channel_folder_name(name)
            if name != folder.name:
                if channel_folder_name_in_use(session, folder.realm_id, name, exclude_id=folder.id):
                    raise JsonableError("Channel folder name already in use")
                folder.name = change["name"] = name
        if description is not None:
            description = check_channel_folder_description(description)
            if description != folder.description:
                folder.description = change["description"] = description
                folder.rendered_description = change["rendered_description"] = render_markdown(description)
        if is_archived is not None and is_archived != folder.is_archived:
            if is_archived:
                _uncategorize_channels(tx, session, folder)
            folder.is_archived = change["is_archived"] = is_archived
        if change:
            event = ev.ChannelFolderUpdate(channel_folder_id=folder.id, data=ev.ChannelFolderChange(**change))
            tx.send_event(folder.realm_id, event, active_user_ids(session, folder.realm_id))


def _uncategorize_channels(tx: Tx, session: Session, folder: ChannelFolder) -> None:
    """Archiving a folder leaves its channels (archived ones too) without a folder."""
    streams = session.scalars(select(Stream).where(Stream.folder_id == folder.id).order_by(Stream.id)).all()
    for stream in streams:
        stream.folder_id = None
    session.flush()
    for stream in streams:
        event = ev.StreamUpdate(stream_id=stream.id, name=stream.name, property="folder_id", value=None)
        tx.send_event(stream.realm_id, event, metadata_access_user_ids(session, stream))


def do_reorder_channel_folders(session: Session, realm_id: int, order: list[int]) -> None:
    """Give the folders the order ``order`` lists them in; it must name each folder once."""
    with transaction(session) as tx:
        # The whole set of folders decides; folders are made under the realm's lock too.
        realm = session.get(Realm, realm_id)
        assert realm is not None
        tx.lock(realm)
        folders = session.scalars(select(ChannelFolder).where(ChannelFolder.realm_id == realm_id)).all()
        if len(order) != len(set(order)) or set(order) != {f.id for f in folders}:
            raise JsonableError("Invalid order mapping.")
        position = {folder_id: i for i, folder_id in enumerate(order)}
        for folder in folders:
            folder.order = position[folder.id]
        tx.send_event(realm_id, ev.ChannelFolderReorder(order=order), active_user_ids(session, realm_id))
