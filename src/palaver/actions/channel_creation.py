"""Creating channels together with their first subscribers.

POST /channels/create makes one channel and may subscribe people to it; POST
/users/me/subscriptions subscribes by name and creates the channels that do not exist yet.
Both sit above ``new_channels`` (which creates a channel) and ``subscriptions`` (which
subscribes to existing ones), so neither of those needs the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext
from palaver.actions.new_channels import NewChannel, announce_new_channels, create_channel
from palaver.actions.subscriptions import add_subscriptions
from palaver.db.transaction import transaction
from palaver.lib.channels import check_stream_name, get_streams_by_names, has_metadata_access, viewer_for
from palaver.lib.exceptions import JsonableError
from palaver.lib.subscriptions import can_add_subscribers, can_subscribe_self, check_subscription_property
from palaver.lib.users import requester_user
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.names import name_key
from palaver.models.requester import Requester


def do_create_channel(
    session: Session,
    acting_user: Requester,
    new: NewChannel,
    subscribers: Sequence[UserProfile] = (),
    *,
    announce: SendContext | None = None,
) -> Stream:
    """POST /channels/create: a new channel and, optionally, its first subscribers.

    ``announce`` (the request's context) has the creation announced.
    """
    with transaction(session) as tx:
        stream = create_channel(tx, session, acting_user, new)
        if subscribers:
            add_subscriptions(tx, session, [stream], subscribers)
        if announce is not None:
            announce_new_channels(session, acting_user, [stream], announce)
    return stream


@dataclass(frozen=True)
class ChannelRequest:
    """One entry of the ``subscriptions`` parameter of POST /users/me/subscriptions."""

    name: str
    description: str = ""
    color: str | None = None


@dataclass
class SubscribeResult:
    subscribed: dict[str, list[str]]
    already_subscribed: dict[str, list[str]]
    unauthorized: list[str]


def do_subscribe_by_name(
    session: Session,
    acting_user: Requester,
    requests: Sequence[ChannelRequest],
    users: Sequence[UserProfile] | None = None,
    *,
    template: NewChannel,
    authorization_errors_fatal: bool = True,
    announce: SendContext | None = None,
) -> SubscribeResult:
    """Subscribe users (None: the acting user) to channels named by the acting user,
    creating the missing ones.

    ``template`` configures channels this creates (its name is ignored). Channels the acting
    user may not subscribe these users to are an error, or, when errors are not fatal, are
    reported back and skipped. ``announce`` (the request's context) has the channels this
    creates announced.
    """
    names: dict[str, tuple[str, ChannelRequest]] = {}
    for request in requests:
        name = check_stream_name(request.name)
        # One entry per name as the unique index compares names: two spellings of one name
        # are one channel, made or joined once.
        names.setdefault(name_key(name), (name, request))
    with transaction(session) as tx:
        if users is None:
            users = [requester_user(session, acting_user)]
        viewer = viewer_for(session, acting_user)
        existing = get_streams_by_names(session, acting_user.realm_id, [name for name, _ in names.values()])
        others = any(u.id != acting_user.user_id for u in users)
        chosen: list[tuple[Stream, ChannelRequest]] = []
        created: list[Stream] = []
        unauthorized: list[str] = []
        for name, request in names.values():
            stream = existing.get(name.lower())
            if stream is None:
                new = dataclasses.replace(template, name=name, description=request.description)
                stream = create_channel(tx, session, acting_user, new)
                created.append(stream)
            elif not (can_add_subscribers(viewer, stream) if others else can_subscribe_self(viewer, stream)):
                if authorization_errors_fatal:
                    if others and has_metadata_access(viewer, stream):
                        raise JsonableError("Insufficient permission")
                    raise JsonableError(f"Unable to access channel ({stream.name}).")
                unauthorized.append(stream.name)
                continue
            chosen.append((stream, request))
        streams = [stream for stream, _ in chosen]
        colors = {
            stream.id: check_subscription_property("color", request.color)
            for stream, request in chosen
            if request.color is not None
        }
        outcome = add_subscriptions(tx, session, streams, users, colors=colors)
        if announce is not None:
            announce_new_channels(session, acting_user, created, announce)
    return SubscribeResult(
        subscribed={str(uid): [s.name for s in ss] for uid, ss in outcome.subscribed.items()},
        already_subscribed={str(uid): [s.name for s in ss] for uid, ss in outcome.already_subscribed.items()},
        unauthorized=unauthorized,
    )
