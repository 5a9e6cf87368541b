"""Changing a user's real email address (an administrator's or operator's edit)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.user_creation import bot_event_recipients
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.users import (
    api_email_for,
    can_view_delivery_email,
    check_email,
    get_user_by_delivery_email,
    user_ids_who_can_access,
)
from palaver.models import UserProfile
from palaver.models.requester import Requester


def do_change_user_delivery_email(
    session: Session, user: UserProfile, new_email: str, email_host: str
) -> None:
    """Set the user's real address; the API email follows when it is the real one.

    Viewers allowed to see the real address get ``delivery_email``; everyone who knows
    the user gets ``new_email`` if the API email changed.
    """
    new_email = check_email(new_email)
    with transaction(session) as tx:
        other = get_user_by_delivery_email(session, user.realm_id, new_email)
        if other is not None and other.id != user.id:
            raise JsonableError("Email is already in use.")
        if user.delivery_email == new_email:
            return
        user.delivery_email = new_email
        recipients = user_ids_who_can_access(session, user)
        viewers = session.scalars(select(UserProfile).where(UserProfile.id.in_(recipients))).all()
        seeing = [v.id for v in viewers if can_view_delivery_email(Requester.of(v), user)]
        person = ev.PersonDeliveryEmail(user_id=user.id, delivery_email=new_email)
        tx.send_event(user.realm_id, ev.RealmUserUpdate(person=person), seeing)
        api_email = api_email_for(email_host, user)
        if api_email != user.email:
            user.email = api_email
            update = ev.PersonNewEmail(user_id=user.id, new_email=api_email)
            tx.send_event(user.realm_id, ev.RealmUserUpdate(person=update), recipients)
        if user.is_bot:
            bot = ev.BotChange(user_id=user.id, email=api_email)
            tx.send_event(user.realm_id, ev.RealmBotUpdate(bot=bot), bot_event_recipients(session, user))
