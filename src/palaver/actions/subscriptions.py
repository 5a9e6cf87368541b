"""Subscribing and unsubscribing users, and each user's own settings for a channel.

Events follow one pattern: the users whose subscriptions changed get ``subscription`` add or
remove events carrying their own view of the channels; everyone else who may see the
subscriber list gets ``peer_add``/``peer_remove``; and users who gain or lose sight of a
private channel by it get ``stream`` create or delete events first.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from palaver.actions.channel_notify import notify_stream_created, notify_stream_deleted
from palaver.actions.guest_access import GuestAccessTracker
from palaver.actions.message_flags import mark_unsubscribed_channels_read
from palaver.db.locks import lock_rows
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import (
    get_stream_by_id,
    get_streams_by_names,
    has_metadata_access,
    metadata_access_user_ids,
    viewer_for,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.subscriptions import (
    can_remove_subscribers,
    check_subscription_property,
    format_subscriptions,
    subscriptions_by_user,
    used_colors,
)
from palaver.lib.users import requester_user
from palaver.models import UserProfile
from palaver.models.channels import DefaultStream, Stream, Subscription
from palaver.models.requester import Requester


def _palette(count: int = 24) -> tuple[str, ...]:
    # Soft hues stepped by the golden ratio, so consecutive picks land far apart on the wheel.
    colors = []
    for i in range(count):
        r, g, b = colorsys.hls_to_rgb((i * 0.618034) % 1, 0.68, 0.55)
        colors.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return tuple(colors)


STREAM_COLORS = _palette()


def _pick_color(taken: set[str]) -> str:
    free = [c for c in STREAM_COLORS if c not in taken]
    return free[0] if free else STREAM_COLORS[len(taken) % len(STREAM_COLORS)]


@dataclass
class SubscribeOutcome:
    """Per user ID: the channels newly subscribed to, and those they were already in."""

    subscribed: dict[int, list[Stream]] = field(default_factory=dict)
    already_subscribed: dict[int, list[Stream]] = field(default_factory=dict)


def add_subscriptions(
    tx: Tx,
    session: Session,
    streams: Sequence[Stream],
    users: Sequence[UserProfile],
    *,
    colors: dict[int, str] | None = None,
) -> SubscribeOutcome:
    """Subscribe every user to every channel, inside the caller's transaction."""
    outcome = SubscribeOutcome()
    if not streams or not users:
        return outcome
    # Concurrent changes to one channel's subscribers take turns, so each decides on rows
    # the other has committed (two adds of one user must not both insert).
    lock_rows(session, Stream, [s.id for s in streams])
    # The write transaction expired the users: one query reloads them all, where reading
    # each one's ID would have loaded it alone.
    _reload(session, users)
    guests = _guest_tracker(session, streams, users)
    before = {s.id: metadata_access_user_ids(session, s) for s in streams}
    existing = subscriptions_by_user(session, [u.id for u in users], [s.id for s in streams])
    taken = used_colors(session, [u.id for u in users])
    new_by_stream: dict[int, list[int]] = {}
    added: dict[int, list[tuple[Stream, Subscription]]] = {}
    for user in users:
        for stream in streams:
            sub = existing.get((user.id, stream.id))
            if sub is not None and sub.active:
                outcome.already_subscribed.setdefault(user.id, []).append(stream)
                continue
            if sub is None:
                color = (colors or {}).get(stream.id) or _pick_color(taken[user.id])
                taken[user.id].add(color)
                assert stream.recipient_id is not None
                sub = Subscription(user_profile_id=user.id, recipient_id=stream.recipient_id, color=color)
                session.add(sub)
            else:
                # A returning subscriber keeps the settings of their earlier subscription.
                sub.active = True
            outcome.subscribed.setdefault(user.id, []).append(stream)
            new_by_stream.setdefault(stream.id, []).append(user.id)
            added.setdefault(user.id, []).append((stream, sub))
    session.flush()

    realm_id = streams[0].realm_id
    for stream in streams:
        if stream.id not in new_by_stream:
            continue
        after = metadata_access_user_ids(session, stream)
        gained = after - before[stream.id]
        if gained:
            notify_stream_created(tx, session, stream, gained)
        new_ids = new_by_stream[stream.id]
        peers = after - set(new_ids)
        tx.send_event(
            realm_id, ev.SubscriptionPeerAdd(stream_ids=[stream.id], user_ids=sorted(new_ids)), peers
        )
    # Formatted together, so each channel is rendered once however many users joined it.
    flat = [(user_id, pair) for user_id, pairs in added.items() for pair in pairs]
    formatted = format_subscriptions(session, [pair for _, pair in flat], include_subscribers=True)
    payloads: dict[int, list[ev.SubscriptionPayload]] = {}
    for (user_id, _), item in zip(flat, formatted, strict=True):
        payloads.setdefault(user_id, []).append(ev.SubscriptionPayload(**item))
    for user_id, subs in payloads.items():
        tx.send_event(realm_id, ev.SubscriptionAdd(subscriptions=subs), [user_id])
    guests.send(tx)
    return outcome


def _reload(session: Session, users: Sequence[UserProfile]) -> None:
    if len(users) > 1:
        ids = [key[0] for u in users if (key := inspect(u).identity) is not None]
        session.scalars(select(UserProfile).where(UserProfile.id.in_(ids))).all()


def _guest_tracker(
    session: Session, streams: Sequence[Stream], users: Sequence[UserProfile]
) -> GuestAccessTracker:
    recipient_ids = [s.recipient_id for s in streams if s.recipient_id is not None]
    return GuestAccessTracker(session, streams[0].realm_id, recipient_ids, [u.id for u in users])


def do_add_subscriptions(
    session: Session, streams: Sequence[Stream], users: Sequence[UserProfile]
) -> SubscribeOutcome:
    with transaction(session) as tx:
        return add_subscriptions(tx, session, streams, users)


def do_subscribe_to_default_streams(session: Session, user: UserProfile) -> None:
    """Subscribe a new user to the realm's default channels."""
    with transaction(session) as tx:
        streams = session.scalars(
            select(Stream)
            .join(DefaultStream, DefaultStream.stream_id == Stream.id)
            .where(DefaultStream.realm_id == user.realm_id, Stream.deactivated.is_(False))
            .order_by(Stream.id)
        ).all()
        add_subscriptions(tx, session, streams, [user])


def remove_subscriptions(
    tx: Tx, session: Session, streams: Sequence[Stream], users: Sequence[UserProfile]
) -> tuple[list[tuple[UserProfile, Stream]], list[tuple[UserProfile, Stream]]]:
    """Unsubscribe users; returns the (user, channel) pairs removed and those not subscribed."""
    removed: list[tuple[UserProfile, Stream]] = []
    not_removed: list[tuple[UserProfile, Stream]] = []
    if not streams or not users:
        return removed, not_removed
    # Concurrent changes to one channel's subscribers take turns, so each decides on rows
    # the other has committed (two adds of one user must not both insert).
    lock_rows(session, Stream, [s.id for s in streams])
    # The write transaction expired the users: one query reloads them all, where reading
    # each one's ID would have loaded it alone.
    _reload(session, users)
    guests = _guest_tracker(session, streams, users)
    before = {s.id: metadata_access_user_ids(session, s) for s in streams}
    existing = subscriptions_by_user(session, [u.id for u in users], [s.id for s in streams])
    for user in users:
        for stream in streams:
            sub = existing.get((user.id, stream.id))
            if sub is None or not sub.active:
                not_removed.append((user, stream))
                continue
            sub.active = False
            removed.append((user, stream))
    session.flush()
    # Message layer: unread messages must be in subscribed channels, so leaving a channel
    # marks its messages read (with update_message_flags events).
    mark_unsubscribed_channels_read(tx, session, removed)

    realm_id = streams[0].realm_id
    for user in users:
        gone = [ev.SubscriptionRemoved(stream_id=s.id, name=s.name) for u, s in removed if u is user]
        if gone:
            tx.send_event(realm_id, ev.SubscriptionRemove(subscriptions=gone), [user.id])
    for stream in streams:
        user_ids = sorted(u.id for u, s in removed if s is stream)
        if not user_ids:
            continue
        after = metadata_access_user_ids(session, stream)
        event = ev.SubscriptionPeerRemove(stream_ids=[stream.id], user_ids=user_ids)
        tx.send_event(realm_id, event, after - set(user_ids))
        lost = before[stream.id] - after
        if lost:
            notify_stream_deleted(tx, stream, lost)
    guests.send(tx)
    return removed, not_removed


def do_unsubscribe_by_name(
    session: Session,
    acting_user: Requester,
    names: Sequence[str],
    users: Sequence[UserProfile] | None = None,
) -> tuple[list[str], list[str]]:
    """Unsubscribe users (None: the acting user) from channels by name; returns the names
    removed and not removed."""
    with transaction(session) as tx:
        if users is None:
            users = [requester_user(session, acting_user)]
        viewer = viewer_for(session, acting_user)
        found = get_streams_by_names(session, acting_user.realm_id, names)
        streams: dict[int, Stream] = {}
        for name in names:
            stream = found.get(name.strip().lower())
            # A private channel the user cannot see must not be told apart from a missing one.
            if stream is None or not has_metadata_access(viewer, stream):
                raise JsonableError(
                    f"Channel '{name}' does not exist", code="STREAM_DOES_NOT_EXIST", stream=name
                )
            others = [u for u in users if u.id != acting_user.user_id]
            if others and not can_remove_subscribers(viewer, stream, others):
                raise JsonableError("Insufficient permission")
            streams[stream.id] = stream
        removed, not_removed = remove_subscriptions(tx, session, list(streams.values()), users)
    return [s.name for _, s in removed], [s.name for _, s in not_removed]


def _subscription_for_update(
    session: Session, user: Requester, stream_id: int
) -> tuple[Stream, Subscription]:
    stream = get_stream_by_id(session, user.realm_id, stream_id)
    if stream is None or not has_metadata_access(viewer_for(session, user), stream):
        raise JsonableError("Invalid channel ID")
    sub = subscriptions_by_user(session, [user.user_id], [stream.id]).get((user.user_id, stream.id))
    if sub is None or not sub.active:
        raise JsonableError(f"Not subscribed to channel ID {stream_id}")
    return stream, sub


@dataclass(frozen=True)
class PropertyChange:
    stream_id: int
    property: str
    value: Any


def do_update_subscription_properties(
    session: Session, user: Requester, changes: Sequence[PropertyChange]
) -> None:
    """Change the user's own settings for channels; all changes apply or none.

    ``in_home_view`` is the legacy inverse of ``is_muted``: either one changes the same
    setting and sends both update events, so old and new clients stay in step.
    """
    with transaction(session) as tx:
        for change in changes:
            value = check_subscription_property(change.property, change.value)
            stream, sub = _subscription_for_update(session, user, change.stream_id)
            if change.property in ("is_muted", "in_home_view"):
                muted = value if change.property == "is_muted" else not value
                sub.is_muted = muted
                pair = {"is_muted": muted, "in_home_view": not muted}
                first = change.property
                second = "in_home_view" if first == "is_muted" else "is_muted"
                for prop in (first, second):
                    event = ev.SubscriptionUpdate(stream_id=stream.id, property=prop, value=pair[prop])
                    tx.send_event(user.realm_id, event, [user.user_id])
                continue
            setattr(sub, change.property, value)
            event = ev.SubscriptionUpdate(stream_id=stream.id, property=change.property, value=value)
            tx.send_event(user.realm_id, event, [user.user_id])
