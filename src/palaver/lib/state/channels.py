"""Channel state for POST /register: subscriptions, visible channels, defaults, folders.

Archived channels reach only clients that declare the ``archived_channels`` capability, as
others would show them as live ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from palaver.lib.channel_folders import format_channel_folder, get_channel_folders
from palaver.lib.channels import (
    StreamInfo,
    Viewer,
    default_stream_ids,
    format_streams,
    has_metadata_access,
    realm_stream_infos,
    viewer_for,
)
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.subscriptions import add_subscriber_lists, subscription_properties
from palaver.models.channels import Subscription


@dataclass(frozen=True)
class _VisibleChannels:
    viewer: Viewer
    streams: list[StreamInfo]
    # Formatted once for both providers; each copies before adding its own keys.
    formatted: dict[int, dict[str, Any]]


def _visible_channels(ctx: StateContext) -> _VisibleChannels:
    """The channels the user may see, formatted, shared by the subscription and stream state.

    Archived channels reach only clients that declare the ``archived_channels`` capability.
    """
    cached = ctx.cache.get("visible_channels")
    if isinstance(cached, _VisibleChannels):
        return cached
    with_archived = ctx.client.has_capability("archived_channels")
    viewer = viewer_for(ctx.session, ctx.user)
    streams = [
        s
        for s in realm_stream_infos(ctx.session, ctx.user.realm_id)
        if (with_archived or not s.deactivated) and has_metadata_access(viewer, s)
    ]
    formatted = {item["stream_id"]: item for item in format_streams(ctx.session, streams)}
    visible = _VisibleChannels(viewer, streams, formatted)
    ctx.cache["visible_channels"] = visible
    return visible


# Personal settings of a subscription, read as plain rows (see StreamInfo).
_SUBSCRIPTION_COLUMNS = (
    Subscription.recipient_id,
    Subscription.active,
    Subscription.color,
    Subscription.is_muted,
    Subscription.pin_to_top,
    Subscription.desktop_notifications,
    Subscription.audible_notifications,
    Subscription.push_notifications,
    Subscription.email_notifications,
    Subscription.wildcard_mentions_notify,
)


@state_provider("subscription")
def subscriptions(ctx: StateContext) -> StateDict:
    visible = _visible_channels(ctx)
    by_recipient = {s.recipient_id: s for s in visible.streams}
    rows = ctx.session.connection().execute(
        select(*_SUBSCRIPTION_COLUMNS).where(
            Subscription.user_profile_id == ctx.user.id, Subscription.recipient_id.in_(by_recipient)
        )
    )
    # In the channels' order (by name), as the subscription rows come in any order.
    subs = {by_recipient[row.recipient_id].id: row for row in rows}
    active: list[dict[str, Any]] = []
    inactive: list[dict[str, Any]] = []
    never: list[dict[str, Any]] = []
    for stream in visible.streams:
        item = visible.formatted[stream.id]
        sub = subs.get(stream.id)
        if sub is None:
            never.append(dict(item))
        else:
            (active if sub.active else inactive).append({**item, **subscription_properties(sub)})
    # One query for the subscriber lists of all three.
    add_subscriber_lists(ctx.session, active + inactive + never, ctx.options.include_subscribers)
    return {"subscriptions": active, "unsubscribed": inactive, "never_subscribed": never}


@state_provider("stream")
def streams(ctx: StateContext) -> StateDict:
    visible = _visible_channels(ctx)
    return {"streams": [dict(visible.formatted[s.id]) for s in visible.streams]}


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
