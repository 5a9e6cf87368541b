"""Embedded bots: ``zulip_bots`` handlers run inside the server (not enabled yet)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.models.messages import Message
from palaver.models.users import UserProfile


def run_embedded_bot(
    session: Session, settings: Settings, bot: UserProfile, message: Message, trigger: str
) -> None:
    raise RuntimeError("Embedded bots are not enabled.")
