"""Presence reads and formats (Zulip's model: two timestamps per user, no per-client rows).

A user's row says when a client last had them connected (``idle_timestamp``) and when one
last saw them active (``active_timestamp``). The modern format sends those two numbers
keyed by user ID; the legacy format, keyed by API email, folds them into one status.
Users who turned ``presence_enabled`` off, bots and deactivated users are never listed, so
clients show them offline.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.users import accessible_user_filter
from palaver.models import UserProfile
from palaver.models.presence import UserPresence
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp, utcnow

# Clients ping every 60 s; three missed pings plus slack and the user is offline.
OFFLINE_THRESHOLD_SECONDS = 140
# Several open clients ping independently; the row is rewritten at most this often.
UPDATE_MIN_FREQUENCY_SECONDS = 55
# The legacy format calls a user active if they were active this close to their last ping.
LEGACY_ACTIVITY_OFFSET_SECONDS = 70
DEFAULT_HISTORY_LIMIT_DAYS = 14
MAX_HISTORY_LIMIT_DAYS = 365 * 100


# Each format is built from a row's two times (``last_active_time``, ``last_connected_time``)
# and the user's ``date_joined``, which stands in for a user never seen active.


def modern_presence(active: datetime | None, connected: datetime, date_joined: datetime) -> dict[str, int]:
    return {
        "active_timestamp": to_timestamp(active or date_joined),
        "idle_timestamp": to_timestamp(connected),
    }


def legacy_client_presence(
    active: datetime | None, connected: datetime, date_joined: datetime
) -> dict[str, Any]:
    active = active or date_joined
    if active + timedelta(seconds=LEGACY_ACTIVITY_OFFSET_SECONDS) >= connected:
        status, moment = "active", active
    else:
        status, moment = "idle", connected
    return {"client": "website", "status": status, "timestamp": to_timestamp(moment), "pushable": False}


def legacy_presence(active: datetime | None, connected: datetime, date_joined: datetime) -> dict[str, Any]:
    """Both legacy keys: the one (former per-client) "website" entry and its aggregate."""
    website = legacy_client_presence(active, connected, date_joined)
    aggregated = {k: website[k] for k in ("client", "status", "timestamp")}
    return {"website": website, "aggregated": aggregated}


def get_presence_row(session: Session, user_id: int) -> UserPresence | None:
    return session.get(UserPresence, user_id)


def realm_presences(
    session: Session,
    viewer: Requester,
    *,
    modern: bool,
    last_update_id: int | None = None,
    history_limit_days: int | None = None,
) -> tuple[dict[str, Any], int]:
    """Presence of the realm's visible users, and the newest update ID it includes.

    With ``last_update_id`` only rows changed after it are returned (and the history limit
    applies only to a first fetch, when the client holds nothing yet).
    """
    # Columns, not entities: a first fetch reads a row per user of the realm.
    query = (
        select(
            UserPresence.last_active_time,
            UserPresence.last_connected_time,
            UserPresence.last_update_id,
            UserProfile.id,
            UserProfile.email,
            UserProfile.date_joined,
        )
        .join(UserProfile, UserProfile.id == UserPresence.user_profile_id)
        .where(
            UserPresence.realm_id == viewer.realm_id,
            UserProfile.is_active,
            UserProfile.is_bot.is_(False),
            UserProfile.presence_enabled,
            accessible_user_filter(session, viewer),
        )
    )
    if last_update_id is not None and last_update_id > 0:
        query = query.where(UserPresence.last_update_id > last_update_id)
    else:
        days = DEFAULT_HISTORY_LIMIT_DAYS if history_limit_days is None else history_limit_days
        days = max(0, min(days, MAX_HISTORY_LIMIT_DAYS))
        query = query.where(UserPresence.last_connected_time >= utcnow() - timedelta(days=days))
    result: dict[str, Any] = {}
    newest = -1 if last_update_id is None else last_update_id
    for active, connected, update_id, user_id, email, date_joined in session.execute(query):
        newest = max(newest, update_id)
        if modern:
            result[str(user_id)] = modern_presence(active, connected, date_joined)
        else:
            result[email] = legacy_presence(active, connected, date_joined)
    return result, newest


def presence_response(
    session: Session,
    viewer: Requester,
    *,
    modern: bool,
    last_update_id: int | None = None,
    history_limit_days: int | None = None,
) -> dict[str, Any]:
    server_timestamp = time.time()
    presences, newest = realm_presences(
        session, viewer, modern=modern, last_update_id=last_update_id, history_limit_days=history_limit_days
    )
    return {"presences": presences, "server_timestamp": server_timestamp, "presence_last_update_id": newest}


def user_presence(session: Session, target: UserProfile, name: str) -> dict[str, Any]:
    """One user's legacy presence without client details, "offline" once stale."""
    if target.is_bot:
        raise JsonableError("Presence is not supported for bot users.")
    presence = get_presence_row(session, target.id) if target.presence_enabled else None
    if presence is None:
        raise JsonableError(f"No presence data for {name}")
    entries = legacy_presence(presence.last_active_time, presence.last_connected_time, target.date_joined)
    if time.time() - entries["aggregated"]["timestamp"] > OFFLINE_THRESHOLD_SECONDS:
        entries["aggregated"]["status"] = "offline"
    return {key: {"status": e["status"], "timestamp": e["timestamp"]} for key, e in entries.items()}
