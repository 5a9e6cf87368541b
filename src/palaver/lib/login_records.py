"""The audit log of sign-ins (and of administrators' changes to them), as administrators read it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.models.auth import LoginRecord
from palaver.timeutil import to_timestamp

MAX_LOGINS = 1000


def recent_logins(
    session: Session, realm_id: int, *, user_id: int | None, before_id: int | None, limit: int
) -> list[dict[str, Any]]:
    """The organization's sign-ins, newest first (``before_id`` pages back)."""
    query = select(LoginRecord).where(LoginRecord.realm_id == realm_id)
    if user_id is not None:
        query = query.where(LoginRecord.user_profile_id == user_id)
    if before_id is not None:
        query = query.where(LoginRecord.id < before_id)
    rows = session.scalars(query.order_by(LoginRecord.id.desc()).limit(max(1, min(limit, MAX_LOGINS))))
    return [
        {
            "id": row.id,
            "user_id": row.user_profile_id,
            "method": row.method,
            "channel": row.channel,
            "ip_address": row.ip_address,
            "user_agent": row.user_agent,
            "timestamp": to_timestamp(row.timestamp),
            "acting_user_id": row.acting_user_id,
        }
        for row in rows
    ]
