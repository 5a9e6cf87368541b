"""Presence pings: rows rewritten at most once a minute, events only on coming online
(and only in organizations of at most ``presence_update_events_max_users`` active users).

Clients ping every minute from every open window, so most pings must cost one indexed
read and no write: the row changes only when a timestamp is more than
``UPDATE_MIN_FREQUENCY_SECONDS`` old, and the realm hears of it only when the user comes
back online (or from idle to active), as clients poll for the rest.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.presence import (
    OFFLINE_THRESHOLD_SECONDS,
    UPDATE_MIN_FREQUENCY_SECONDS,
    get_presence_row,
    legacy_client_presence,
    modern_presence,
)
from palaver.lib.users import requester_user, user_ids_who_can_access
from palaver.models import UserProfile
from palaver.models.presence import PresenceSequence, UserPresence
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

PresenceStatus = Literal["active", "idle"]

_MIN_FREQUENCY = timedelta(seconds=UPDATE_MIN_FREQUENCY_SECONDS)
_OFFLINE = timedelta(seconds=OFFLINE_THRESHOLD_SECONDS)
_CLOCK_SKEW_MARGIN = timedelta(seconds=120)


def _needs_write(presence: UserPresence | None, status: PresenceStatus, now: datetime) -> bool:
    if presence is None:
        return True
    if now - presence.last_connected_time > _MIN_FREQUENCY:
        return True
    return status == "active" and (
        presence.last_active_time is None or now - presence.last_active_time > _MIN_FREQUENCY
    )


def _next_update_id(session: Session, realm_id: int) -> int:
    query = select(PresenceSequence).where(PresenceSequence.realm_id == realm_id).with_for_update()
    sequence = session.scalars(query).one_or_none()
    if sequence is None:
        try:
            with session.begin_nested():
                sequence = PresenceSequence(realm_id=realm_id, last_update_id=0)
                session.add(sequence)
        except IntegrityError:
            # Another first ping of the realm created it meanwhile.
            sequence = session.scalars(query).one()
    sequence.last_update_id += 1
    return sequence.last_update_id


def do_update_user_presence(
    session: Session, user: Requester, status: PresenceStatus, *, now: datetime | None = None
) -> None:
    now = now or utcnow()
    # Decided outside the write transaction: most pings change nothing and should not
    # take the database's write lock.
    if not _needs_write(get_presence_row(session, user.user_id), status, now):
        return
    with transaction(session) as tx:
        # Re-read under the lock: a concurrent ping from another window may have written.
        locked = (
            select(UserPresence)
            .where(UserPresence.user_profile_id == user.user_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        presence = session.scalars(locked).one_or_none()
        if not _needs_write(presence, status, now):
            return
        if presence is None:
            presence = UserPresence(
                user_profile_id=user.user_id, realm_id=user.realm_id, last_connected_time=now
            )
            session.add(presence)
            came_online = True
        else:
            came_online = now - presence.last_connected_time > _OFFLINE
            if now - presence.last_connected_time > _MIN_FREQUENCY:
                presence.last_connected_time = now
        if status == "active" and (
            presence.last_active_time is None or now - presence.last_active_time > _MIN_FREQUENCY
        ):
            if presence.last_active_time is None or now - presence.last_active_time > _OFFLINE:
                came_online = True
            presence.last_active_time = now
        presence.last_update_id = _next_update_id(session, user.realm_id)
        session.flush()
        if came_online and user.presence_enabled and not user.is_bot and _broadcasts_presence(session, user):
            _send_presence(tx, session, requester_user(session, user), presence)


def do_announce_presence_enabled(
    session: Session, user: UserProfile, enabled: bool, *, now: datetime | None = None
) -> None:
    """Tell the realm at once that the user turned presence sharing on or off.

    Presence lists leave out users who turned it off, but clients keep what they last
    heard: without an event they would show the user online until it went stale. As in
    Zulip, turning it off reports the user as last online a little longer ago than the
    offline threshold (with a margin for clock skew), and turning it on reports them
    active now.
    """
    if user.is_bot:
        return
    now = now or utcnow()
    with transaction(session) as tx:
        presence = session.scalars(
            select(UserPresence)
            .where(UserPresence.user_profile_id == user.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).one_or_none()
        moment = now if enabled else now - _OFFLINE - _CLOCK_SKEW_MARGIN
        if presence is None:
            presence = UserPresence(
                user_profile_id=user.id, realm_id=user.realm_id, last_connected_time=moment
            )
            session.add(presence)
        presence.last_connected_time = moment
        # Never left unset: clients would read the join time instead, which may be recent.
        if enabled or presence.last_active_time is None or presence.last_active_time > moment:
            presence.last_active_time = moment
        presence.last_update_id = _next_update_id(session, user.realm_id)
        session.flush()
        _send_presence(tx, session, user, presence)


def _broadcasts_presence(session: Session, user: Requester) -> bool:
    """Whether coming online is news worth an event in the user's realm.

    As in Zulip, large organizations get none: their clients poll every minute, and the
    events would cost the server work quadratic in the realm's size. One indexed count
    decides it, before anyone's access is computed. Turning presence sharing on or off is
    always announced (``do_announce_presence_enabled`` does not ask).
    """
    limit: int = session.info["db"].settings.presence_update_events_max_users
    active = session.scalar(
        select(func.count())
        .select_from(UserProfile)
        .where(UserProfile.realm_id == user.realm_id, UserProfile.is_active)
    )
    return (active or 0) <= limit


def _send_presence(tx: Tx, session: Session, user: UserProfile, presence: UserPresence) -> None:
    """The user's presence, in the legacy and modern forms, to everyone who may see them."""
    times = (presence.last_active_time, presence.last_connected_time, user.date_joined)
    event = ev.PresenceEvent(
        user_id=user.id,
        email=user.email,
        server_timestamp=time.time(),
        presence={"website": ev.LegacyPresenceClient(**legacy_client_presence(*times))},
        presences={str(user.id): ev.ModernPresence(**modern_presence(*times))},
    )
    tx.send_event(user.realm_id, event, user_ids_who_can_access(session, user))
