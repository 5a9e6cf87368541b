"""Channel state for POST /register: subscriptions, visible channels, defaults, folders.

Archived channels reach only clients that declare the ``archived_channels`` capability, as
others would show them as live ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson
from sqlalchemy import Connection, String, bindparam, cast, func, select
from sqlalchemy.orm import Session

from palaver.cache import Loaded, cached_component, columns
from palaver.lib.channel_folders import format_channel_folder, get_channel_folders
from palaver.lib.channels import (
    StreamInfo,
    default_stream_ids,
    format_streams,
    has_metadata_access,
    realm_stream_infos,
    viewer_for,
)
from palaver.lib.realm import deactivated_user_ids
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.subscriptions import SubscriptionRow, add_subscriber_lists, subscription_properties
from palaver.models import GroupGroupMembership, UserGroup, UserGroupMembership, UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.requester import Requester


@dataclass(frozen=True, slots=True)
class _RealmChannelState:
    """Every channel of a realm formatted, with its subscriber list: the same for every viewer.

    Kept as JSON, as the user list is (lib/realm_user_list.py): a subscription object is
    the channel's members plus the user's own settings, so each channel's object is kept
    without its braces and the user's part spliced in. Shared by threads through the
    realm-state cache, never mutated.
    """

    # In ``realm_streams``' order (by name as the database sorts it, then ID).
    streams: tuple[StreamInfo, ...]
    # The channel object's members, ``"stream_id":…,…`` (no braces).
    members: MappingProxyType[int, bytes]
    subscriber_count: MappingProxyType[int, int]
    # ``,"subscribers":[…]``: active users actively subscribed, sorted.
    subscribers: MappingProxyType[int, bytes]


# Each channel's active subscriptions, as one string of user IDs per channel: an organization
# of 10,000 users has ~100,000, and a row each through SQLAlchemy cost twice the query.
_SUBSCRIBER_LISTS = (
    select(Subscription.recipient_id, func.aggregate_strings(cast(Subscription.user_profile_id, String), ","))
    .join(Stream, Stream.recipient_id == Subscription.recipient_id)
    .where(Stream.realm_id == bindparam("realm_id"), Subscription.active)
    .group_by(Subscription.recipient_id)
)


def _load_channel_state(conn: Connection, realm_id: int) -> _RealmChannelState:
    with Session(bind=conn) as session:
        streams = realm_stream_infos(session, realm_id)
        inactive = deactivated_user_ids(session, [realm_id])
        by_recipient = {s.recipient_id: s.id for s in streams}
        lists: dict[int, list[int]] = {s.id: [] for s in streams}
        for recipient_id, ids in conn.execute(_SUBSCRIBER_LISTS, {"realm_id": realm_id}):
            users = map(int, ids.split(","))
            lists[by_recipient[recipient_id]] = sorted(
                users if not inactive else (u for u in users if u not in inactive)
            )
        counts = {stream_id: len(ids) for stream_id, ids in lists.items()}
        formatted = format_streams(session, streams, counts=counts)
    return _RealmChannelState(
        tuple(streams),
        MappingProxyType({item["stream_id"]: orjson.dumps(item)[1:-1] for item in formatted}),
        MappingProxyType(counts),
        MappingProxyType(
            {stream_id: b',"subscribers":' + orjson.dumps(ids) for stream_id, ids in lists.items()}
        ),
    )


# Channel objects show subscriber counts and group-setting values (anonymous groups list
# their active members), so groups are read too, and of users only whether they are active.
_CHANNEL_STATE = Loaded(
    "register_channels",
    frozenset(
        {
            Stream.__tablename__,
            Subscription.__tablename__,
            UserGroup.__tablename__,
            UserGroupMembership.__tablename__,
            GroupGroupMembership.__tablename__,
        }
    )
    | columns(UserProfile, "realm_id", "is_active"),
    _load_channel_state,
)


@dataclass(frozen=True)
class _VisibleChannels:
    realm: _RealmChannelState
    streams: list[StreamInfo]


def _visible_channels(ctx: StateContext) -> _VisibleChannels:
    """The channels the user may see, shared by the subscription and stream state.

    Archived channels reach only clients that declare the ``archived_channels`` capability.
    """
    cached = ctx.cache.get("visible_channels")
    if isinstance(cached, _VisibleChannels):
        return cached
    with_archived = ctx.client.has_capability("archived_channels")
    session, user = ctx.session, ctx.user
    viewer = viewer_for(session, Requester.of(user))
    realm = cached_component(session, user.realm_id, _CHANNEL_STATE)
    streams = [
        s for s in realm.streams if (with_archived or not s.deactivated) and has_metadata_access(viewer, s)
    ]
    visible = _VisibleChannels(realm, streams)
    ctx.cache["visible_channels"] = visible
    return visible


_SUBSCRIPTION_COLUMNS = tuple(Subscription.__table__.c[name] for name in SubscriptionRow._fields)


@state_provider("subscription")
def subscriptions(ctx: StateContext) -> StateDict:
    visible = _visible_channels(ctx)
    by_recipient = {s.recipient_id: s for s in visible.streams}
    # All of the user's rows, those of channels not shown dropped here: a thousand-item IN
    # list cost more than the rows it leaves out.
    rows = (
        ctx.session.connection()
        .execute(select(*_SUBSCRIPTION_COLUMNS).where(Subscription.user_profile_id == ctx.user.id))
        .all()
    )
    # In the channels' order (by name), as the subscription rows come in any order.
    subs = {
        stream.id: SubscriptionRow._make(row)
        for row in rows
        if (stream := by_recipient.get(row[0])) is not None
    }
    realm = visible.realm
    include = ctx.options.include_subscribers
    extra: Mapping[int, bytes] = realm.subscribers if include is True else {}
    if include == "partial":
        extra = _partial_subscriber_lists(ctx, visible)
    active: list[bytes] = []
    inactive: list[bytes] = []
    never: list[bytes] = []
    for stream in visible.streams:
        sub = subs.get(stream.id)
        # The channel's members, then the user's settings (none if never subscribed).
        own = b"," + orjson.dumps(subscription_properties(sub))[1:-1] if sub is not None else b""
        item = b"".join((b"{", realm.members[stream.id], own, extra.get(stream.id, b""), b"}"))
        (never if sub is None else active if sub.active else inactive).append(item)
    return {
        "subscriptions": _json_array(active),
        "unsubscribed": _json_array(inactive),
        "never_subscribed": _json_array(never),
    }


def _partial_subscriber_lists(ctx: StateContext, visible: _VisibleChannels) -> dict[int, bytes]:
    """``include_subscribers=partial``: large channels list only bots and recently active
    subscribers (``partial_subscribers``), read apart; others their full list."""
    counts = visible.realm.subscriber_count
    stubs: list[dict[str, Any]] = [
        {"stream_id": s.id, "subscriber_count": counts[s.id]} for s in visible.streams
    ]
    add_subscriber_lists(ctx.session, stubs, "partial")
    return {
        stub.pop("stream_id"): b","
        + orjson.dumps({k: v for k, v in stub.items() if k != "subscriber_count"})[1:-1]
        for stub in stubs
    }


def _json_array(items: list[bytes]) -> orjson.Fragment:
    # Already JSON: orjson writes fragments as they are.
    return orjson.Fragment(b"[" + b",".join(items) + b"]")


@state_provider("stream")
def streams(ctx: StateContext) -> StateDict:
    visible = _visible_channels(ctx)
    members = visible.realm.members
    return {"streams": _json_array([b"{" + members[s.id] + b"}" for s in visible.streams])}


@state_provider("default_streams")
def default_streams(ctx: StateContext) -> StateDict:
    # As in Zulip, guests see no default channels (they may not see them all), and
    # default_streams events go only to the other users (actions/channel_notify.py).
    if ctx.user.is_guest:
        return {"realm_default_streams": []}
    return {"realm_default_streams": default_stream_ids(ctx.session, ctx.realm.id)}


@state_provider("channel_folders")
def channel_folders(ctx: StateContext) -> StateDict:
    folders = get_channel_folders(ctx.session, ctx.realm.id, include_archived=True)
    return {"channel_folders": [format_channel_folder(f) for f in folders]}
