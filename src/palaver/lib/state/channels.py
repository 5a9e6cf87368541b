"""Channel state for POST /register: subscriptions, visible channels, defaults, folders.

Archived channels reach only clients that declare the ``archived_channels`` capability, as
others would show them as live ones.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from palaver.lib.channel_folders import format_channel_folder, get_channel_folders
from palaver.lib.channels import (
    add_subscriber_lists,
    default_stream_ids,
    format_streams,
    format_subscriptions,
    get_streams_for_user,
    has_metadata_access,
    realm_streams,
    viewer_for,
)
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.models.channels import Stream, Subscription


def _with_archived(ctx: StateContext) -> bool:
    return ctx.client.has_capability("archived_channels")


@state_provider("subscription")
def subscriptions(ctx: StateContext) -> StateDict:
    session, user = ctx.session, ctx.user
    viewer = viewer_for(session, user)
    streams = [
        s
        for s in realm_streams(session, user.realm_id, include_archived=_with_archived(ctx))
        if has_metadata_access(viewer, s)
    ]
    by_recipient = {s.recipient_id: s for s in streams}
    rows = session.scalars(
        select(Subscription).where(
            Subscription.user_profile_id == user.id, Subscription.recipient_id.in_(by_recipient)
        )
    )
    active: list[tuple[Stream, Subscription]] = []
    inactive: list[tuple[Stream, Subscription]] = []
    for sub in rows:
        (active if sub.active else inactive).append((by_recipient[sub.recipient_id], sub))
    known = {stream.id for stream, _ in active + inactive}
    never = [s for s in streams if s.id not in known]
    include = ctx.options.include_subscribers
    never_items: list[dict[str, Any]] = format_streams(session, never)
    add_subscriber_lists(session, never_items, include)
    return {
        "subscriptions": format_subscriptions(session, active, include_subscribers=include),
        "unsubscribed": format_subscriptions(session, inactive, include_subscribers=include),
        "never_subscribed": never_items,
    }


@state_provider("stream")
def streams(ctx: StateContext) -> StateDict:
    visible = get_streams_for_user(
        ctx.session,
        ctx.user,
        include_web_public=True,
        include_all=True,
        exclude_archived=not _with_archived(ctx),
    )
    return {"streams": format_streams(ctx.session, visible)}


@state_provider("default_streams")
def default_streams(ctx: StateContext) -> StateDict:
    return {"realm_default_streams": default_stream_ids(ctx.session, ctx.realm.id)}


@state_provider("channel_folders")
def channel_folders(ctx: StateContext) -> StateDict:
    folders = get_channel_folders(ctx.session, ctx.realm.id, include_archived=True)
    return {"channel_folders": [format_channel_folder(f) for f in folders]}
