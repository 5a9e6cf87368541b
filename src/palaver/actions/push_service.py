"""Writes of this server's registration with Zulip's push notification service."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.models.push_service import PushServiceRealm, PushServiceServer
from palaver.models.realm import Realm
from palaver.timeutil import utcnow


def do_save_push_registration(
    session: Session, *, url: str, server_uuid: str, server_key: str, hostname: str, contact_email: str
) -> None:
    """Store the credentials the service accepted (one registration per server)."""
    with transaction(session):
        session.execute(delete(PushServiceServer))
        session.add(
            PushServiceServer(
                url=url.rstrip("/"),
                server_uuid=server_uuid,
                server_key=server_key,
                hostname=hostname,
                contact_email=contact_email,
                terms_accepted_at=utcnow(),
            )
        )


def do_ensure_push_realms(session: Session) -> list[tuple[Realm, PushServiceRealm]]:
    """Every organization with the UUID the service knows it by (made on first need)."""
    with transaction(session):
        known = {r.realm_id: r for r in session.scalars(select(PushServiceRealm))}
        pairs = []
        for realm in session.scalars(select(Realm).order_by(Realm.id)):
            row = known.get(realm.id)
            if row is None:
                row = PushServiceRealm(
                    realm_id=realm.id, uuid=str(uuid.uuid4()), uuid_owner_secret=secrets.token_hex(32)
                )
                session.add(row)
            pairs.append((realm, row))
        session.flush()
    return pairs


def do_record_push_realm_status(session: Session, answers: Mapping[str, Mapping[str, Any]]) -> None:
    """The service's word on each organization: whether its plan lets it push."""
    with transaction(session):
        for row in session.scalars(select(PushServiceRealm).where(PushServiceRealm.uuid.in_(list(answers)))):
            answer = answers[row.uuid]
            row.can_push = bool(answer.get("can_push"))
            end = answer.get("expected_end_timestamp")
            row.expected_end_timestamp = int(end) if isinstance(end, int | float) else None
            row.last_synced = utcnow()
