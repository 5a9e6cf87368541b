"""Making an account: the user row with the realm's defaults, its role groups, and the
events that introduce it (``realm_user`` add, and ``realm_bot`` add for a bot).

This is the part every account shares, the Notification Bot's included; ``users.do_create_user``
adds what only a person joining gets (default channels, the signup notice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, in_write_transaction, transaction
from palaver.events import types as ev
from palaver.lib.avatars import avatar_url
from palaver.lib.bots import bot_extra_fields
from palaver.lib.exceptions import JsonableError
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import active_admin_ids, active_user_ids
from palaver.lib.user_groups import direct_system_groups_for, get_system_groups
from palaver.lib.user_settings import setting_specs
from palaver.lib.users import (
    api_email_for,
    check_email,
    check_full_name,
    format_user,
    get_user_by_delivery_email,
    user_ids_who_can_access,
)
from palaver.models import Realm, RealmUserDefault, Role, UserGroupMembership, UserProfile
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def bot_event_recipients(session: Session, bot: UserProfile) -> list[int]:
    recipients = set(active_admin_ids(session, bot.realm_id))
    if bot.bot_owner_id is not None:
        recipients.add(bot.bot_owner_id)
    return sorted(recipients)


def bot_payload(session: Session, bot: UserProfile) -> ev.BotPayload:
    return ev.BotPayload(
        user_id=bot.id,
        full_name=bot.full_name,
        email=bot.email,
        api_key=bot.api_key,
        bot_type=bot.bot_type or 1,
        is_active=bot.is_active,
        avatar_url=avatar_url(bot),
        owner_id=bot.bot_owner_id,
        **bot_extra_fields(session, bot),
    )


def send_bot_added(tx: Tx, session: Session, bot: UserProfile) -> None:
    """The realm_bot add event, to administrators and the bot's owner."""
    tx.send_event(
        bot.realm_id, ev.RealmBotAdd(bot=bot_payload(session, bot)), bot_event_recipients(session, bot)
    )


def set_system_group_membership(tx: Tx, session: Session, user: UserProfile) -> None:
    """Make the user's direct system-group memberships match their role."""
    groups = get_system_groups(session, user.realm_id)
    realm = user.realm
    full = user.date_joined <= utcnow() - timedelta(days=realm.waiting_period_threshold)
    wanted = {groups[name].id for name in direct_system_groups_for(user.role, full)}
    system_ids = {g.id for g in groups.values()}
    current = set(
        session.scalars(
            select(UserGroupMembership.user_group_id).where(
                UserGroupMembership.user_profile_id == user.id,
                UserGroupMembership.user_group_id.in_(system_ids),
            )
        )
    )
    # Clients removed a deactivated user from every group; membership still follows the role
    # (reactivation announces it), but telling clients now would contradict that.
    recipients = active_user_ids(session, user.realm_id) if user.is_active else []
    for group_id in sorted(current - wanted):
        session.execute(
            delete(UserGroupMembership).where(
                UserGroupMembership.user_group_id == group_id, UserGroupMembership.user_profile_id == user.id
            )
        )
        tx.send_event(
            user.realm_id, ev.UserGroupRemoveMembers(group_id=group_id, user_ids=[user.id]), recipients
        )
    for group_id in sorted(wanted - current):
        session.add(UserGroupMembership(user_group_id=group_id, user_profile_id=user.id))
        tx.send_event(
            user.realm_id, ev.UserGroupAddMembers(group_id=group_id, user_ids=[user.id]), recipients
        )


_EMAIL_INDEX = "uq_user_profile_realm_delivery_email"


@contextmanager
def email_taken_is_an_error() -> Iterator[None]:
    """Concurrent requests for one address can both pass the check in ``create_user``; the
    unique index decides, and the loser hears what the check would have told it."""
    try:
        yield
    except IntegrityError as e:
        if _EMAIL_INDEX in str(e.orig):
            raise JsonableError("Email is already in use.") from None
        raise


def create_user(
    session: Session,
    realm: Realm,
    *,
    email: str,
    full_name: str,
    password_hash: str | None,
    email_host: str,
    role: int = Role.MEMBER,
    bot_type: int | None = None,
    bot_owner_id: int | None = None,
    timezone: str = "",
    announce_bot: bool = True,
) -> UserProfile:
    """Create a user or bot with the realm's default settings and role groups, and introduce
    it to whoever may see it.

    ``announce_bot`` False leaves the realm_bot add event to the caller, which has more of
    the bot to set up first (``do_create_bot``: its default channels and services).
    """
    email = check_email(email)
    full_name = check_full_name(full_name)
    with email_taken_is_an_error(), transaction(session) as tx:
        if get_user_by_delivery_email(session, realm.id, email) is not None:
            raise JsonableError("Email is already in use.")
        defaults = session.get(RealmUserDefault, realm.id)
        user = UserProfile(
            realm=realm,
            email=email,
            delivery_email=email,
            full_name=full_name,
            role=role,
            is_bot=bot_type is not None,
            bot_type=bot_type,
            bot_owner_id=bot_owner_id,
            timezone=timezone,
            api_key=generate_api_key(),
            password=password_hash,
            date_joined=utcnow(),
        )
        if defaults is not None:
            for name in setting_specs():
                setattr(user, name, getattr(defaults, name))
        # The organization's language is not among the defaults administrators edit.
        user.default_language = realm.default_language
        session.add(user)
        session.flush()
        user.email = api_email_for(email_host, user)
        session.flush()
        set_system_group_membership(tx, session, user)

        recipients = user_ids_who_can_access(session, user)
        for viewer in session.scalars(select(UserProfile).where(UserProfile.id.in_(recipients))):
            # Each recipient gets the person as they may see it (delivery_email differs).
            person = format_user(
                user, Requester.of(viewer), client_gravatar=False, profile_data=None if user.is_bot else {}
            )
            tx.send_event(realm.id, ev.RealmUserAdd(person=ev.RealmUserPerson(**person)), [viewer.id])
        if user.is_bot and announce_bot:
            send_bot_added(tx, session, user)
    return user


def get_or_create_bot(
    session: Session, find: Callable[[], UserProfile | None], create: Callable[[], UserProfile]
) -> UserProfile:
    """A realm's built-in bot (``find``), made by ``create`` on first use.

    Outside a write transaction, a concurrent creation by another process (two schedulers
    delivering reminders at once) is recovered from by reading theirs. Inside one, the
    caller's transaction is already lost when that happens, so the error propagates.
    """
    nested = in_write_transaction(session)
    try:
        with transaction(session):
            bot = find()
            return bot if bot is not None else create()
    except (IntegrityError, JsonableError):
        if nested:
            raise
        session.rollback()
        bot = find()
        if bot is None:
            raise
        return bot
