"""Realm exports through the API: request, progress of the background job, deletion.

Every change tells the realm's administrators with a ``realm_export`` event holding the
realm's whole export list, as clients replace theirs with it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.db.transaction import Tx, rowcount, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.ids import get_row
from palaver.lib.realm import active_admin_ids
from palaver.lib.realm_export import realm_exports
from palaver.lib.storage import FileStorage
from palaver.models import Realm, UserProfile
from palaver.models.realm_export import RealmExportRecord, RealmExportType
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

# A claimed export not finished after this long belongs to a process that died.
STALE_CLAIM = timedelta(hours=2)


def _notify(tx: Tx, session: Session, settings: Settings, realm_id: int) -> None:
    session.flush()
    realm = session.get(Realm, realm_id)
    assert realm is not None
    exports = [ev.RealmExportPayload(**e) for e in realm_exports(session, settings, realm)]
    tx.send_event(realm_id, ev.RealmExport(exports=exports), active_admin_ids(session, realm_id))


def do_request_realm_export(session: Session, settings: Settings, user: Requester, export_type: int) -> int:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if export_type not in (RealmExportType.PUBLIC, RealmExportType.STANDARD):
        raise JsonableError("Invalid export type")
    with transaction(session) as tx:
        record = RealmExportRecord(
            realm_id=user.realm_id, acting_user_id=user.user_id, export_type=export_type
        )
        session.add(record)
        _notify(tx, session, settings, user.realm_id)
    return record.id


def do_claim_realm_export(session: Session, export_id: int, now: datetime) -> bool:
    """Take the export for this process; False if another one has it."""
    with transaction(session):
        claimed = session.execute(
            update(RealmExportRecord)
            .where(
                RealmExportRecord.id == export_id,
                RealmExportRecord.pending.is_(True),
                or_(
                    RealmExportRecord.date_started.is_(None),
                    RealmExportRecord.date_started < now - STALE_CLAIM,
                ),
            )
            .values(date_started=now)
        )
        return rowcount(claimed) > 0


def do_finish_realm_export(
    session: Session, settings: Settings, export_id: int, storage_key: str | None, size: int | None
) -> None:
    """Record the outcome: the archive's key, or a failure (no key)."""
    with transaction(session) as tx:
        record = session.get(RealmExportRecord, export_id)
        if record is None or not record.pending:
            return
        record.pending = False
        if storage_key is None:
            record.date_failed = utcnow()
        else:
            record.storage_key, record.size_bytes, record.date_succeeded = storage_key, size, utcnow()
        _notify(tx, session, settings, record.realm_id)


def do_delete_realm_export(
    session: Session, settings: Settings, storage: FileStorage, user: Requester, export_id: int
) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    with transaction(session) as tx:
        # The ID is the client's: one past 32 bits is a missing export, not a database error.
        record = get_row(session, RealmExportRecord, export_id)
        if record is None or record.realm_id != user.realm_id:
            raise JsonableError("Invalid data export ID")
        if record.date_deleted is not None:
            raise JsonableError("Export already deleted")
        if record.date_failed is not None:
            raise JsonableError("Export failed, nothing to delete")
        if record.pending:
            raise JsonableError("Export still in progress")
        record.date_deleted = utcnow()
        key, record.storage_key = record.storage_key, None
        _notify(tx, session, settings, record.realm_id)
    if key:
        storage.delete(key)


def do_notify_export_consent(session: Session, user: UserProfile) -> None:
    """Administrators keep the consent list current (user setting changed, user back)."""
    with transaction(session) as tx:
        event = ev.RealmExportConsent(user_id=user.id, consented=user.allow_private_data_export)
        tx.send_event(user.realm_id, event, active_admin_ids(session, user.realm_id))
