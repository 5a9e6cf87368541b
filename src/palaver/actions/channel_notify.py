"""The events that tell users a channel appeared or vanished for them, and the default channels event."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx
from palaver.events import types as ev
from palaver.lib.channels import default_stream_ids, format_stream
from palaver.models import Role, UserProfile
from palaver.models.channels import Stream


def notify_stream_created(
    tx: Tx, session: Session, stream: Stream, user_ids: Sequence[int] | set[int]
) -> None:
    payload = ev.StreamPayload(**format_stream(session, stream))
    tx.send_event(stream.realm_id, ev.StreamCreate(streams=[payload]), user_ids)


def notify_stream_deleted(tx: Tx, stream: Stream, user_ids: Sequence[int] | set[int]) -> None:
    event = ev.StreamDelete(streams=[ev.StreamRef(stream_id=stream.id)], stream_ids=[stream.id])
    tx.send_event(stream.realm_id, event, user_ids)


def notify_default_streams(tx: Tx, session: Session, realm_id: int) -> None:
    """Tell the realm's members (guests excepted) its default channels, after they changed."""
    recipients = session.scalars(
        select(UserProfile.id).where(
            UserProfile.realm_id == realm_id, UserProfile.is_active, UserProfile.role != Role.GUEST
        )
    )
    event = ev.DefaultStreams(default_streams=default_stream_ids(session, realm_id))
    tx.send_event(realm_id, event, list(recipients))
