"""Writes to drafts. Each user's own clients hear of every change through drafts events."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from sqlalchemy import delete
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.drafts import (
    DraftData,
    ValidatedDraft,
    access_draft,
    check_drafts_enabled,
    format_draft,
    validate_draft,
)
from palaver.lib.users import requester_user
from palaver.models.drafts import Draft
from palaver.models.requester import Requester
from palaver.models.users import UserProfile


def _apply(draft: Draft, valid: ValidatedDraft) -> None:
    draft.type = valid.type
    draft.to = orjson.dumps(valid.to).decode()
    draft.topic = valid.topic
    draft.content = valid.content
    draft.last_edit_time = valid.last_edit_time


def do_create_drafts(session: Session, user: Requester, drafts: Sequence[DraftData]) -> list[Draft]:
    """Create all the drafts or none; IDs come back in the order the drafts were given."""
    with transaction(session) as tx:
        check_drafts_enabled(requester_user(session, user))
        valid = [validate_draft(session, user, data) for data in drafts]
        created = []
        for item in valid:
            draft = Draft(user_profile_id=user.user_id)
            _apply(draft, item)
            session.add(draft)
            created.append(draft)
        session.flush()
        if created:
            payloads = [ev.DraftPayload(**format_draft(d)) for d in created]
            tx.send_event(user.realm_id, ev.DraftsAdd(drafts=payloads), [user.user_id])
    return created


def do_edit_draft(session: Session, user: Requester, draft_id: int, data: DraftData) -> None:
    """Replace the whole draft."""
    with transaction(session) as tx:
        check_drafts_enabled(requester_user(session, user))
        draft = access_draft(session, user, draft_id)
        _apply(draft, validate_draft(session, user, data))
        session.flush()
        event = ev.DraftsUpdate(draft=ev.DraftPayload(**format_draft(draft)))
        tx.send_event(user.realm_id, event, [user.user_id])


def do_delete_draft(session: Session, user: Requester, draft_id: int) -> None:
    with transaction(session) as tx:
        check_drafts_enabled(requester_user(session, user))
        draft = access_draft(session, user, draft_id)
        session.delete(draft)
        tx.send_event(user.realm_id, ev.DraftsRemove(draft_id=draft_id), [user.user_id])


def do_delete_all_drafts(session: Session, user: UserProfile) -> None:
    """Forget every draft the server holds for the user, silently.

    Used when the user turns drafts synchronization off: clients keep their local copies,
    so telling them to drop drafts would destroy the very copies the user meant to keep.
    """
    with transaction(session):
        session.execute(delete(Draft).where(Draft.user_profile_id == user.id))
