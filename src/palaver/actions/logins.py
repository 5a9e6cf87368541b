"""Recording a password login (API key fetch or web sign-in)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.account_emails import queue_login_notice
from palaver.actions.users import send_person_update
from palaver.db import transaction
from palaver.events import types as ev
from palaver.models import UserProfile
from palaver.timeutil import utcnow


def do_record_login(session: Session, user: UserProfile, *, client: str = "") -> None:
    """Note a password login (API or web), and queue the new-login email.

    An account made for someone (through the API, the command line or an import) joined,
    for clients, when its owner first logs in; until then date_joined is its creation time.
    """
    with transaction(session) as tx:
        first_login = user.last_login is None or user.is_imported_stub
        queue_login_notice(session, user, client=client, first_login=first_login)
        user.last_login = utcnow()
        if first_login:
            user.date_joined = user.last_login
        if user.is_imported_stub:
            user.is_imported_stub = False
            send_person_update(
                tx, session, user, ev.PersonImportedStub(user_id=user.id, is_imported_stub=False)
            )
