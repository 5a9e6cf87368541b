"""Reading the organization's audit log, newest first, as administrators see it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.models.realm_audit_log import AuditLogEventType, RealmAuditLog


@dataclass(frozen=True)
class AuditEntry:
    id: int
    event_type: int
    event_time: datetime
    acting_user_id: int | None
    extra_data: dict[str, Any]

    @property
    def event_name(self) -> str:
        try:
            return AuditLogEventType(self.event_type).name.lower()
        except ValueError:
            return str(self.event_type)


def realm_audit_log(session: Session, realm_id: int, *, limit: int = 100) -> list[AuditEntry]:
    rows = session.scalars(
        select(RealmAuditLog)
        .where(RealmAuditLog.realm_id == realm_id)
        .order_by(RealmAuditLog.event_time.desc(), RealmAuditLog.id.desc())
        .limit(limit)
    )
    return [
        AuditEntry(row.id, row.event_type, row.event_time, row.acting_user_id, orjson.loads(row.extra_data))
        for row in rows
    ]
