"""Weekly digests (filled in below)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from palaver.config import Settings


def queue_due_digests(session: Session, settings: Settings, now: datetime) -> int:
    return 0
