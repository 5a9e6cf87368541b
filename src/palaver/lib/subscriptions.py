"""Subscription reads: a user's subscriptions as clients receive them (with subscriber
lists), the per-subscription properties, and who may subscribe or unsubscribe whom.

Channel lookups and access levels are in ``lib/channels.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from palaver.lib.channels import (
    IncludeSubscribers,
    Viewer,
    can_administer_stream,
    format_streams,
    has_content_access,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import storable_ids
from palaver.lib.realm import deactivated_user_ids
from palaver.lib.users import access_user_by_email, access_user_by_id
from palaver.models import UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.presence import UserPresence
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

SUBSCRIPTION_PROPERTIES = (
    "color",
    "is_muted",
    "pin_to_top",
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)


_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


# With include_subscribers=partial, channels with at least this many subscribers get
# ``partial_subscribers`` (bots and recently active users) instead of the full list.
MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE = 250


# Users active this recently are always in ``partial_subscribers``.
PARTIAL_SUBSCRIBERS_ACTIVE_DAYS = 14


def check_subscription_property(name: str, value: Any) -> Any:
    """Validate a value for a personal subscription property (``in_home_view`` included)."""
    if name == "color":
        if not isinstance(value, str) or not _COLOR.match(value):
            raise JsonableError(f"{name} is not a valid hex color code")
        return value.lower()
    if name not in (*SUBSCRIPTION_PROPERTIES, "in_home_view"):
        raise JsonableError(f"Unknown subscription property: {name}")
    if not isinstance(value, bool):
        raise JsonableError(f"{name} is not a boolean")
    return value


def get_subscription(session: Session, user_id: int, stream: Stream) -> Subscription | None:
    return session.scalars(
        select(Subscription).where(
            Subscription.user_profile_id == user_id, Subscription.recipient_id == stream.recipient_id
        )
    ).one_or_none()


class SubscriptionRow(NamedTuple):
    """A subscription's personal settings as a plain row: POST /register reads a thousand."""

    recipient_id: int
    active: bool
    color: str
    is_muted: bool
    pin_to_top: bool
    desktop_notifications: bool | None
    audible_notifications: bool | None
    push_notifications: bool | None
    email_notifications: bool | None
    wildcard_mentions_notify: bool | None


def subscription_properties(sub: Subscription | SubscriptionRow) -> dict[str, Any]:
    return {
        "color": sub.color,
        "is_muted": sub.is_muted,
        "in_home_view": not sub.is_muted,
        "pin_to_top": sub.pin_to_top,
        "desktop_notifications": sub.desktop_notifications,
        "audible_notifications": sub.audible_notifications,
        "push_notifications": sub.push_notifications,
        "email_notifications": sub.email_notifications,
        "wildcard_mentions_notify": sub.wildcard_mentions_notify,
    }


def _recently_active_subscriber_ids(session: Session, stream_ids: Sequence[int]) -> dict[int, set[int]]:
    """Per channel, the subscribers a partial list must hold: bots and recently active users.

    Active means a client reported the user connected or active, or the account is new
    enough that it cannot have been idle that long.
    """
    result: dict[int, set[int]] = {i: set() for i in stream_ids}
    if not stream_ids:
        return result
    since = utcnow() - timedelta(days=PARTIAL_SUBSCRIBERS_ACTIVE_DAYS)
    rows = session.execute(
        select(Stream.id, Subscription.user_profile_id)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .join(UserProfile, UserProfile.id == Subscription.user_profile_id)
        .outerjoin(UserPresence, UserPresence.user_profile_id == UserProfile.id)
        .where(
            Stream.id.in_(stream_ids),
            Subscription.active,
            UserProfile.is_active,
            or_(
                UserProfile.is_bot,
                UserProfile.date_joined >= since,
                UserPresence.last_connected_time >= since,
                UserPresence.last_active_time >= since,
            ),
        )
    )
    for stream_id, user_id in rows:
        result[stream_id].add(user_id)
    return result


def _sorted_subscriber_lists(session: Session, stream_ids: Sequence[int]) -> dict[int, list[int]]:
    """``subscriber_ids_by_stream`` as sorted lists, for many channels at once.

    Deactivated users are few, so they are dropped afterwards rather than by joining each
    subscription to its user, a lookup per subscriber (100,000 of them for an owner of a
    thousand channels asking for every list).
    """
    result: dict[int, list[int]] = {i: [] for i in stream_ids}
    if not stream_ids:
        return result
    inactive = deactivated_user_ids(session, select(Stream.realm_id).where(Stream.id.in_(stream_ids)))
    # One row per channel, its subscribers aggregated by the database: a row per
    # subscription cost twice as much in Python.
    postgresql = session.get_bind().dialect.name == "postgresql"
    aggregated = (
        func.array_agg(Subscription.user_profile_id)
        if postgresql
        else func.group_concat(Subscription.user_profile_id)
    )
    rows = session.connection().execute(
        select(Stream.id, aggregated)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .where(Stream.id.in_(stream_ids), Subscription.active)
        .group_by(Stream.id)
    )
    for stream_id, users in rows:
        ids = users if postgresql else [int(u) for u in users.split(",")]
        result[stream_id] = sorted(u for u in ids if u not in inactive) if inactive else sorted(ids)
    return result


def add_subscriber_lists(
    session: Session, items: Sequence[dict[str, Any]], include_subscribers: IncludeSubscribers
) -> None:
    """Add ``subscribers`` (or, for large channels when ``partial`` is asked, the shorter
    ``partial_subscribers``) to formatted channel objects, as include_subscribers asks."""
    if not include_subscribers:
        return
    stream_ids = list({item["stream_id"] for item in items})
    large: set[int] = set()
    if include_subscribers == "partial":
        large = {
            item["stream_id"]
            for item in items
            if item["subscriber_count"] >= MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE
        }
    full = _sorted_subscriber_lists(session, [i for i in stream_ids if i not in large])
    partial = _recently_active_subscriber_ids(session, sorted(large))
    for item in items:
        stream_id = item["stream_id"]
        if stream_id in large:
            item["partial_subscribers"] = sorted(partial[stream_id])
        else:
            # A copy: the same channel may be in several lists of one response.
            item["subscribers"] = list(full[stream_id])


def format_subscriptions(
    session: Session, pairs: Sequence[tuple[Stream, Subscription]], *, include_subscribers: IncludeSubscribers
) -> list[dict[str, Any]]:
    """Channel subscription objects: the channel's fields plus the user's own settings.

    Pairs may be of several users; each channel is formatted once.
    """
    streams = list({stream.id: stream for stream, _ in pairs}.values())
    items = {item["stream_id"]: item for item in format_streams(session, streams)}
    result = [{**items[stream.id], **subscription_properties(sub)} for stream, sub in pairs]
    add_subscriber_lists(session, result, include_subscribers)
    return result


def get_user_subscriptions(session: Session, user: Requester) -> list[tuple[Stream, Subscription]]:
    """The user's active subscriptions to channels that are not archived."""
    rows = session.execute(
        select(Stream, Subscription)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .where(
            Subscription.user_profile_id == user.user_id, Subscription.active, Stream.deactivated.is_(False)
        )
        .order_by(Stream.name, Stream.id)
    )
    return list(rows)


def subscriptions_by_user(
    session: Session, user_ids: Iterable[int], stream_ids: Iterable[int]
) -> dict[tuple[int, int], Subscription]:
    """Existing subscription rows (active or not), keyed by (user ID, channel ID)."""
    users, streams = list(user_ids), list(stream_ids)
    if not users or not streams:
        return {}
    rows = session.execute(
        select(Stream.id, Subscription)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .where(Stream.id.in_(streams), Subscription.user_profile_id.in_(users))
    )
    return {(sub.user_profile_id, stream_id): sub for stream_id, sub in rows}


def used_colors(session: Session, user_ids: Sequence[int]) -> dict[int, set[str]]:
    """The colors each user's subscriptions already have (lower-cased), in one query."""
    taken: dict[int, set[str]] = {user_id: set() for user_id in user_ids}
    rows = session.execute(
        select(Subscription.user_profile_id, Subscription.color).where(
            Subscription.user_profile_id.in_(taken)
        )
    )
    for user_id, color in rows:
        taken[user_id].add(color.lower())
    return taken


def can_subscribe_self(viewer: Viewer, stream: Stream) -> bool:
    if viewer.is_subscribed(stream) or can_administer_stream(viewer, stream):
        return True
    if stream.invite_only or viewer.user.is_guest:
        return not {stream.can_add_subscribers_group, stream.can_subscribe_group}.isdisjoint(viewer.groups)
    return True


def can_add_subscribers(viewer: Viewer, stream: Stream) -> bool:
    """Whether the viewer may subscribe other users to the channel."""
    if can_administer_stream(viewer, stream) or stream.can_add_subscribers_group in viewer.groups:
        return True
    realm_allows = viewer.realm.can_add_subscribers_group in viewer.groups
    return realm_allows and not viewer.user.is_guest and has_content_access(viewer, stream)


def can_remove_subscribers(viewer: Viewer, stream: Stream, targets: Iterable[UserProfile]) -> bool:
    """Whether the viewer may unsubscribe these other users (their own bots always)."""
    if can_administer_stream(viewer, stream) or stream.can_remove_subscribers_group in viewer.groups:
        return True
    return all(
        t.id == viewer.user.user_id or (t.is_bot and t.bot_owner_id == viewer.user.user_id) for t in targets
    )


def principals_to_users(
    session: Session, acting_user: Requester, principals: Sequence[int] | Sequence[str], *, email_host: str
) -> list[UserProfile]:
    """The active users named by IDs or API emails; anyone else is "No such user"."""
    # One query for the users named by ID (a channel created for a whole organization names
    # thousands); the checks below then find each in the session instead of reading it.
    # (Held in a local: the session's identity map keeps only what something refers to.)
    named = storable_ids(p for p in principals if isinstance(p, int))
    loaded: Sequence[UserProfile] = ()
    if len(named) > 1:
        loaded = session.scalars(
            select(UserProfile).where(UserProfile.realm_id == acting_user.realm_id, UserProfile.id.in_(named))
        ).all()
    users: dict[int, UserProfile] = {}
    for principal in principals:
        if isinstance(principal, int):
            user = access_user_by_id(session, acting_user, principal)
        else:
            user = access_user_by_email(session, acting_user, principal, email_host=email_host)
        if not user.is_active:
            raise JsonableError("No such user")
        users[user.id] = user
    del loaded
    return list(users.values())
