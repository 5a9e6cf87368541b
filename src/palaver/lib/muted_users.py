"""Reads of muted users: whom a user has muted, as clients list them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.models.muted_users import MutedUser
from palaver.timeutil import to_timestamp


def get_mute(session: Session, user_id: int, muted_user_id: int) -> MutedUser | None:
    return session.scalar(
        select(MutedUser).where(
            MutedUser.user_profile_id == user_id, MutedUser.muted_user_id == muted_user_id
        )
    )


def muted_users_list(session: Session, user_id: int) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(MutedUser).where(MutedUser.user_profile_id == user_id).order_by(MutedUser.id)
    )
    return [{"id": row.muted_user_id, "timestamp": to_timestamp(row.date_muted)} for row in rows]
