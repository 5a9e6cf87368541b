"""The organization's audit log: what was done to the organization as a whole, by whom.

The shape of Zulip's RealmAuditLog (realm, acting user, event type, time, extra data), with
Zulip's numeric event types, so an export carries it without translation.
"""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ForeignKey, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class AuditLogEventType(IntEnum):
    # Zulip's numbers (zerver/models/realm_audit_logs.py).
    REALM_CREATED = 215
    # The organization was made from an export (another server's, or another chat system's).
    REALM_IMPORTED = 229


class RealmAuditLog(Base):
    __tablename__ = "realm_audit_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # None for what no person did (an import from the command line, the server itself).
    acting_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    event_type: Mapped[int] = mapped_column()
    event_time: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    # JSON object; what the event type says it holds (an import: its source and counts).
    extra_data: Mapped[str] = mapped_column(Text, default="{}")
