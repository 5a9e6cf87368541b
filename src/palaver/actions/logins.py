"""Recording a login (API key fetch, web sign-in, the apps' flow), by any method."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.account_emails import queue_login_notice
from palaver.actions.users import send_person_update
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.models import UserProfile
from palaver.models.auth import LoginRecord
from palaver.timeutil import utcnow


def do_record_login(
    session: Session,
    user: UserProfile,
    *,
    client: str = "",
    method: str = "password",
    channel: str = "api",
    ip_address: str = "",
) -> None:
    """Note a login in the audit log, and queue the new-login email.

    An account made for someone (through the API, the command line or an import) joined,
    for clients, when its owner first logs in; until then date_joined is its creation time.
    """
    with transaction(session) as tx:
        first_login = user.last_login is None or user.is_imported_stub
        queue_login_notice(session, user, client=client, first_login=first_login)
        user.last_login = utcnow()
        session.add(
            LoginRecord(
                realm_id=user.realm_id,
                user_profile_id=user.id,
                method=method[:64],
                channel=channel,
                ip_address=ip_address[:64],
                user_agent=client[:255],
                timestamp=user.last_login,
            )
        )
        if first_login:
            user.date_joined = user.last_login
        if user.is_imported_stub:
            user.is_imported_stub = False
            send_person_update(
                tx, session, user, ev.PersonImportedStub(user_id=user.id, is_imported_stub=False)
            )
