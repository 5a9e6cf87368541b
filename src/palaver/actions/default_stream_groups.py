"""Creating and editing default channel groups; every change tells the whole realm."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import default_stream_ids
from palaver.lib.default_stream_groups import (
    check_group_name,
    format_default_stream_groups,
    get_group_by_name,
    group_stream_ids,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm import active_user_ids
from palaver.models.channels import Stream
from palaver.models.default_stream_groups import DefaultStreamGroup, DefaultStreamGroupChannel


def _notify(tx: Tx, session: Session, realm_id: int) -> None:
    session.flush()
    groups = [ev.DefaultStreamGroupPayload(**g) for g in format_default_stream_groups(session, realm_id)]
    tx.send_event(
        realm_id, ev.DefaultStreamGroups(default_stream_groups=groups), active_user_ids(session, realm_id)
    )


def _check_name_free(session: Session, realm_id: int, name: str) -> None:
    if get_group_by_name(session, realm_id, name) is not None:
        raise JsonableError(f"Default channel group '{name}' already exists")


def _add_streams(session: Session, group: DefaultStreamGroup, streams: Sequence[Stream]) -> None:
    present = group_stream_ids(session, group.id)
    defaults = set(default_stream_ids(session, group.realm_id))
    for stream in streams:
        if stream.id in defaults:
            raise JsonableError(f"'{stream.name}' is a default channel and cannot be added to '{group.name}'")
        if stream.id in present:
            raise JsonableError(
                f"Channel '{stream.name}' is already present in default channel group '{group.name}'"
            )
        session.add(DefaultStreamGroupChannel(group_id=group.id, stream_id=stream.id))
        present.add(stream.id)


def do_create_default_stream_group(
    session: Session, realm_id: int, name: str, description: str, streams: Sequence[Stream]
) -> DefaultStreamGroup:
    name = check_group_name(name)
    with transaction(session) as tx:
        _check_name_free(session, realm_id, name)
        group = DefaultStreamGroup(realm_id=realm_id, name=name, description=description)
        session.add(group)
        session.flush()
        _add_streams(session, group, streams)
        _notify(tx, session, realm_id)
    return group


def do_change_default_stream_group_streams(
    session: Session, group: DefaultStreamGroup, op: str, streams: Sequence[Stream]
) -> None:
    with transaction(session) as tx:
        if op == "add":
            _add_streams(session, group, streams)
        elif op == "remove":
            present = group_stream_ids(session, group.id)
            for stream in streams:
                if stream.id not in present:
                    raise JsonableError(
                        f"Channel '{stream.name}' is not present in default channel group '{group.name}'"
                    )
            session.execute(
                delete(DefaultStreamGroupChannel).where(
                    DefaultStreamGroupChannel.group_id == group.id,
                    DefaultStreamGroupChannel.stream_id.in_([s.id for s in streams]),
                )
            )
        else:
            raise JsonableError('Invalid value for "op". Specify one of "add" or "remove".')
        _notify(tx, session, group.realm_id)


def do_update_default_stream_group(
    session: Session, group: DefaultStreamGroup, *, new_name: str | None, new_description: str | None
) -> None:
    if new_name is None and new_description is None:
        raise JsonableError('You must pass "new_description" or "new_group_name".')
    with transaction(session) as tx:
        if new_name is not None:
            name = check_group_name(new_name)
            if name == group.name:
                raise JsonableError(f"This default channel group is already named '{name}'")
            _check_name_free(session, group.realm_id, name)
            group.name = name
        if new_description is not None:
            group.description = new_description
        _notify(tx, session, group.realm_id)


def do_remove_default_stream_group(session: Session, group: DefaultStreamGroup) -> None:
    with transaction(session) as tx:
        realm_id = group.realm_id
        session.delete(group)
        _notify(tx, session, realm_id)
