"""Channel reads: lookups, who may see what, validation, and the objects clients receive.

Two levels of access, as clients know them: *metadata* access (the channel's name, settings
and subscriber list) and *content* access (its messages). Public channels give both to every
member; private ones give content to subscribers and to the groups that may subscribe, and
metadata also to organization administrators and the channel's own administrators. Guests
see only channels they are subscribed to, and web-public ones.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from operator import attrgetter
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.cache import (
    ChannelFacts,
    RealmRow,
    active_subscriber_ids,
    active_users,
    cached_channel_by_name,
    realm_settings,
    subscribed_channel_ids,
    user_group_ids,
    user_realm_id,
)
from palaver.cache import StreamInfo as StreamInfo  # noqa: PLC0414 (re-exported, lib/state uses it)
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    CREATOR,
    GroupSettingRule,
    render_group_settings,
)
from palaver.lib.ids import get_row
from palaver.lib.limits import MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH
from palaver.lib.markdown.contract import StreamRef
from palaver.lib.markdown.urls import channel_narrow_url
from palaver.lib.user_groups import NOBODY, recursive_member_ids
from palaver.models import Realm, UserGroup, UserProfile
from palaver.models.channels import (
    STREAM_GROUP_SETTINGS,
    TOPICS_POLICIES,
    DefaultStream,
    Stream,
    Subscription,
)
from palaver.models.messages import Message
from palaver.models.names import name_key
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp

STREAM_GROUP_RULES: dict[str, GroupSettingRule] = {
    "can_add_subscribers_group": GroupSettingRule(NOBODY, allow_everyone_group=False),
    "can_administer_channel_group": GroupSettingRule(CREATOR, allow_everyone_group=False),
    "can_create_topic_group": GroupSettingRule("role:everyone"),
    "can_delete_any_message_group": GroupSettingRule(NOBODY),
    "can_delete_own_message_group": GroupSettingRule(NOBODY),
    "can_move_messages_out_of_channel_group": GroupSettingRule(NOBODY),
    "can_move_messages_within_channel_group": GroupSettingRule(NOBODY),
    "can_remove_subscribers_group": GroupSettingRule("role:administrators", allow_nobody_group=False),
    "can_resolve_topics_group": GroupSettingRule(NOBODY),
    "can_send_message_group": GroupSettingRule("role:everyone"),
    "can_subscribe_group": GroupSettingRule(NOBODY, allow_everyone_group=False),
}
assert tuple(STREAM_GROUP_RULES) == STREAM_GROUP_SETTINGS

# Changing these needs content access as well as permission to administer the channel.
SETTINGS_REQUIRING_CONTENT_ACCESS = frozenset({"can_add_subscribers_group", "can_subscribe_group"})

# Legacy clients read who may post from stream_post_policy; only these groups map onto it.
_POST_POLICY_BY_GROUP = {
    "role:everyone": 1,
    "role:administrators": 2,
    "role:fullmembers": 3,
    "role:moderators": 4,
}


IncludeSubscribers = bool | Literal["partial"]


_group_settings_of = attrgetter(*STREAM_GROUP_SETTINGS)


class Unchanged(Enum):
    """Marks a setting an edit leaves alone, where None is itself a value to set."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED


# Validation ---------------------------------------------------------------------------------


def first_unprintable(value: str) -> int | None:
    for index, char in enumerate(value):
        if unicodedata.category(char) in ("Cc", "Cs", "Cn") or char in "\u2028\u2029":
            return index + 1
    return None


def check_stream_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Channel name can't be empty.")
    if len(name) > MAX_STREAM_NAME_LENGTH:
        raise JsonableError(f"Channel name too long (limit: {MAX_STREAM_NAME_LENGTH} characters).")
    position = first_unprintable(name)
    if position is not None:
        raise JsonableError(f"Invalid character in channel name, at position {position}.")
    return name


def check_stream_description(description: str) -> str:
    # Descriptions are shown on one line.
    description = description.replace("\r\n", " ").replace("\n", " ").strip()
    if len(description) > MAX_STREAM_DESCRIPTION_LENGTH:
        raise JsonableError(
            f"Channel description too long (limit: {MAX_STREAM_DESCRIPTION_LENGTH} characters)."
        )
    return description


def parse_message_retention_days(value: str | int) -> int | None:
    if value == "realm_default":
        return None
    if value == "unlimited":
        return -1
    if isinstance(value, int) and value > 0:
        return value
    raise JsonableError(f"Bad value for 'message_retention_days': {value}")


def check_topics_policy(policy: str) -> str:
    if policy not in TOPICS_POLICIES:
        raise JsonableError("Invalid topics_policy")
    return policy


# Lookups ------------------------------------------------------------------------------------


def get_stream_by_id(session: Session, realm_id: int, stream_id: int) -> Stream | None:
    stream = get_row(session, Stream, stream_id)
    return stream if stream is not None and stream.realm_id == realm_id else None


def get_stream_by_name(session: Session, realm_id: int, name: str) -> Stream | None:
    # The cache gives the ID (a primary-key read instead of a scan of lower(name)); the
    # row read confirms it, since another process's rename may be a moment from arriving.
    # Names match as the unique index compares them (name_key: Unicode casefold), so
    # "STRASSE" finds "Straße" rather than being taken for a new channel's name.
    key = name_key(name.strip())
    info = cached_channel_by_name(session, realm_id, name)
    if info is not None:
        stream = get_row(session, Stream, info.id)
        if stream is not None and stream.realm_id == realm_id and stream.name_key == key:
            return stream
    query = select(Stream).where(Stream.realm_id == realm_id, Stream.name_key == key)
    return session.scalars(query).one_or_none()


def channel_name_in_use(session: Session, realm_id: int, name: str, *, exclude_id: int | None = None) -> bool:
    """Whether another channel's name equals ``name`` regardless of case (the unique index's
    rule, models/names.py), archived channels included."""
    query = select(Stream.id).where(Stream.realm_id == realm_id, Stream.name_key == name_key(name.strip()))
    if exclude_id is not None:
        query = query.where(Stream.id != exclude_id)
    return session.scalar(query) is not None


def get_streams_by_names(session: Session, realm_id: int, names: Iterable[str]) -> dict[str, Stream]:
    """Existing channels by each asked name lower-cased, matched as the unique index compares
    names (name_key), so every spelling asked for finds its channel."""
    keys: dict[str, list[str]] = {}
    for asked in {n.strip().lower() for n in names}:
        keys.setdefault(name_key(asked), []).append(asked)
    if not keys:
        return {}
    rows = session.scalars(select(Stream).where(Stream.realm_id == realm_id, Stream.name_key.in_(keys)))
    return {asked: stream for stream in rows for asked in keys.get(stream.name_key, ())}


def subscribed_stream_ids(session: Session, user_id: int) -> set[int]:
    """The channels (archived ones included) the user is actively subscribed to."""
    realm_id = user_realm_id(session, user_id)
    return set() if realm_id is None else set(subscribed_channel_ids(session, realm_id, user_id))


def subscriber_ids_by_stream(session: Session, stream_ids: Iterable[int]) -> dict[int, set[int]]:
    """Active users actively subscribed to each channel."""
    ids = list(stream_ids)
    result: dict[int, set[int]] = {i: set() for i in ids}
    if not ids:
        return result
    rows = session.execute(
        select(Stream.id, Subscription.user_profile_id)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .join(UserProfile, UserProfile.id == Subscription.user_profile_id)
        .where(Stream.id.in_(ids), Subscription.active, UserProfile.is_active)
    )
    for stream_id, user_id in rows:
        result[stream_id].add(user_id)
    return result


def subscriber_ids(session: Session, stream: ChannelFacts) -> set[int]:
    """Active users actively subscribed to the channel (from the realm-state cache)."""
    return set(active_subscriber_ids(session, stream.realm_id, stream.id))


def subscriber_counts(session: Session, stream_ids: Iterable[int]) -> dict[int, int]:
    """Active subscriptions of active users, per channel.

    Counted as every active subscription (read from the index alone) less those of
    deactivated users, who are few: joining each subscription to its user instead costs a
    lookup per subscriber, which for a thousand channels dominated POST /register.
    """
    ids = list(stream_ids)
    if not ids:
        return {}
    counts: dict[int, int] = {}
    by_recipient: dict[int, int] = {}
    for stream_id, recipient_id, count in session.execute(
        select(Stream.id, Subscription.recipient_id, func.count())
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .where(Stream.id.in_(ids), Subscription.active)
        .group_by(Stream.id, Subscription.recipient_id)
    ):
        counts[stream_id] = count
        by_recipient[recipient_id] = stream_id
    realms = select(Stream.realm_id).where(Stream.id.in_(ids))
    deactivated = list(
        session.scalars(
            select(UserProfile.id).where(UserProfile.realm_id.in_(realms), UserProfile.is_active.is_(False))
        )
    )
    if deactivated:
        # Driven by the deactivated users' own subscriptions, not by each channel's.
        for recipient_id, count in session.execute(
            select(Subscription.recipient_id, func.count())
            .where(Subscription.user_profile_id.in_(deactivated), Subscription.active)
            .group_by(Subscription.recipient_id)
        ):
            if recipient_id in by_recipient:
                counts[by_recipient[recipient_id]] -= count
    return {stream_id: count for stream_id, count in counts.items() if count}


def default_stream_ids(session: Session, realm_id: int) -> list[int]:
    return sorted(session.scalars(select(DefaultStream.stream_id).where(DefaultStream.realm_id == realm_id)))


def realm_streams(session: Session, realm_id: int, *, include_archived: bool) -> list[Stream]:
    query = select(Stream).where(Stream.realm_id == realm_id).order_by(Stream.name, Stream.id)
    if not include_archived:
        query = query.where(Stream.deactivated.is_(False))
    return list(session.scalars(query))


def realm_stream_infos(session: Session, realm_id: int) -> list[StreamInfo]:
    """Every channel of the realm, archived ones included, in ``realm_streams``' order."""
    columns = [Stream.__table__.c[name] for name in StreamInfo._fields]
    query = select(*columns).where(Stream.realm_id == realm_id).order_by(Stream.name, Stream.id)
    return [StreamInfo._make(row) for row in session.connection().execute(query)]


def channel_has_named_topics(session: Session, stream: Stream) -> bool:
    """Whether any message of the channel is in a topic other than the empty one."""
    found = session.scalar(
        select(Message.id)
        .where(
            Message.realm_id == stream.realm_id,
            Message.recipient_id == stream.recipient_id,
            Message.subject != "",
        )
        .limit(1)
    )
    return found is not None


def get_announcement_channel(session: Session, realm: Realm, setting: str) -> Stream | None:
    """The live channel a realm announcement setting names, if any."""
    stream_id: int | None = getattr(realm, setting)
    if stream_id is None:
        return None
    stream = get_stream_by_id(session, realm.id, stream_id)
    return None if stream is None or stream.deactivated else stream


def channel_link_syntax(stream: Stream) -> str:
    """A link to a channel as message Markdown."""
    if any(c in stream.name for c in "*`>$"):
        # The #**channel** syntax cannot hold these; a plain link can.
        return f"[#{stream.name}]({channel_narrow_url(StreamRef(stream.id, stream.name)).lstrip('/')})"
    return f"#**{stream.name}**"


# Access -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Viewer:
    """What access checks need to know about a user, gathered once for many channels."""

    user: Requester
    subscribed: frozenset[int]
    groups: frozenset[int]
    # The realm's settings from the realm cache (its permission groups).
    realm: RealmRow

    def is_subscribed(self, stream: ChannelFacts) -> bool:
        return stream.id in self.subscribed


def viewer_for(session: Session, user: Requester) -> Viewer:
    # The cache's frozensets themselves: immutable, shared, no copy.
    return Viewer(
        user,
        subscribed_channel_ids(session, user.realm_id, user.user_id),
        user_group_ids(session, user.realm_id, user.user_id),
        realm_settings(session, user.realm_id),
    )


def has_content_access(viewer: Viewer, stream: ChannelFacts) -> bool:
    if viewer.is_subscribed(stream):
        return True
    if stream.invite_only:
        return not {stream.can_add_subscribers_group, stream.can_subscribe_group}.isdisjoint(viewer.groups)
    return stream.is_web_public or not viewer.user.is_guest


def can_administer_stream(viewer: Viewer, stream: ChannelFacts) -> bool:
    return viewer.user.is_realm_admin or stream.can_administer_channel_group in viewer.groups


def has_metadata_access(viewer: Viewer, stream: ChannelFacts) -> bool:
    if has_content_access(viewer, stream):
        return True
    return stream.invite_only and can_administer_stream(viewer, stream)


def _access_stream(session: Session, user: Requester, stream: Stream | None, *, content: bool) -> Stream:
    if stream is not None:
        viewer = viewer_for(session, user)
        allowed = has_content_access(viewer, stream) if content else has_metadata_access(viewer, stream)
        if allowed:
            return stream
    raise JsonableError("Invalid channel ID")


def access_stream_by_id(
    session: Session, user: Requester, stream_id: int, *, require_content_access: bool = False
) -> Stream:
    """Fetch a channel the user may see; missing and forbidden look the same."""
    stream = get_stream_by_id(session, user.realm_id, stream_id)
    return _access_stream(session, user, stream, content=require_content_access)


def access_stream_by_name(
    session: Session, user: Requester, name: str, *, require_content_access: bool = False
) -> Stream:
    stream = get_stream_by_name(session, user.realm_id, name)
    try:
        return _access_stream(session, user, stream, content=require_content_access)
    except JsonableError:
        raise JsonableError(f"Invalid channel name '{name}'") from None


def access_announcement_channel(session: Session, user: Requester, stream_id: int) -> int | None:
    """The value to store for an announcement-channel setting; a negative ID turns it off."""
    if stream_id < 0:
        return None
    stream = get_stream_by_id(session, user.realm_id, stream_id)
    if stream is None or stream.deactivated:
        raise JsonableError("Invalid channel ID")
    # Only a channel whose messages the administrator may read, so that choosing one does
    # not reveal a private channel they were never let into.
    return access_stream_by_id(session, user, stream.id, require_content_access=True).id


def metadata_access_user_ids(session: Session, stream: Stream) -> set[int]:
    """Active users who may see the channel exist: who hears of changes to it."""
    subscribers = subscriber_ids(session, stream)
    active = active_users(session, stream.realm_id)
    # Owners and administrators see every channel; members every public one.
    if stream.invite_only:
        seen_by_role = active.administrators
    else:
        seen_by_role = active.all if stream.is_web_public else active.non_guests
    # One copy, grown in place (``set(a).union(b)`` copies 10,000 IDs twice).
    granted = set(seen_by_role)
    granted |= subscribers
    if not stream.invite_only:
        return granted
    for setting in ("can_administer_channel_group", "can_add_subscribers_group", "can_subscribe_group"):
        granted |= recursive_member_ids(session, getattr(stream, setting))
    return granted


def get_streams_for_user(
    session: Session,
    user: Requester,
    *,
    include_public: bool = True,
    include_web_public: bool = False,
    include_subscribed: bool = True,
    exclude_archived: bool = True,
    include_all: bool = False,
    include_default: bool = False,
    include_owner_subscribed: bool = False,
    include_can_access_content: bool = False,
) -> list[Stream]:
    viewer = viewer_for(session, user)
    defaults = set(default_stream_ids(session, user.realm_id)) if include_default else set()
    owner_subscribed: set[int] = set()
    if include_owner_subscribed and user.is_bot and user.bot_owner_id is not None:
        owner_subscribed = subscribed_stream_ids(session, user.bot_owner_id)

    def wanted(stream: Stream) -> bool:
        return (
            include_all
            or (include_public and stream.is_public and not user.is_guest)
            or (include_web_public and stream.is_web_public)
            or (include_subscribed and viewer.is_subscribed(stream))
            or stream.id in defaults
            or stream.id in owner_subscribed
            or (include_can_access_content and has_content_access(viewer, stream))
        )

    streams = realm_streams(session, user.realm_id, include_archived=not exclude_archived)
    # A bot acts for its owner, so it may list the channels the owner is subscribed to.
    return [s for s in streams if wanted(s) and (has_metadata_access(viewer, s) or s.id in owner_subscribed)]


# Formatting ---------------------------------------------------------------------------------


def _stream_post_policy(group_name: str | None) -> int:
    return _POST_POLICY_BY_GROUP.get(group_name or "", 1)


def stream_post_policy(session: Session, can_send_message_group: int) -> int:
    """The legacy view of who may post, for a can_send_message_group value."""
    group = session.get(UserGroup, can_send_message_group)
    return _stream_post_policy(group.name if group is not None and group.is_system_group else None)


def format_streams(
    session: Session,
    streams: Sequence[ChannelFacts],
    *,
    include_default: bool = False,
    counts: Mapping[int, int] | None = None,
) -> list[dict[str, Any]]:
    """The channel objects of GET /streams and of stream events. ``counts``: the channels'
    subscriber counts when the caller has them (``subscriber_counts`` otherwise)."""
    if not streams:
        return []
    settings_by_stream = [_group_settings_of(s) for s in streams]
    # Many channels share each value (a role group), so each is rendered once.
    rendered = render_group_settings(session, {gid for values in settings_by_stream for gid in values})
    system_names = {
        group_id: name
        for group_id, name in session.execute(
            select(UserGroup.id, UserGroup.name).where(
                UserGroup.id.in_({s.can_send_message_group for s in streams}), UserGroup.is_system_group
            )
        )
    }
    if counts is None:
        counts = subscriber_counts(session, [s.id for s in streams])
    defaults = set(default_stream_ids(session, streams[0].realm_id)) if include_default else set()
    result = []
    for stream, values in zip(streams, settings_by_stream, strict=True):
        post_policy = _stream_post_policy(system_names.get(stream.can_send_message_group))
        item: dict[str, Any] = {
            "stream_id": stream.id,
            "name": stream.name,
            "is_archived": stream.is_archived,
            "description": stream.description,
            "rendered_description": stream.rendered_description,
            "date_created": to_timestamp(stream.date_created),
            "creator_id": stream.creator_id,
            "invite_only": stream.invite_only,
            "is_web_public": stream.is_web_public,
            "stream_post_policy": post_policy,
            "is_announcement_only": post_policy == 2,
            "message_retention_days": stream.message_retention_days,
            "history_public_to_subscribers": stream.history_public_to_subscribers,
            "first_message_id": stream.first_message_id,
            "folder_id": stream.folder_id,
            "topics_policy": stream.topics_policy,
            "is_recently_active": stream.is_recently_active,
            # No traffic statistics are kept; null tells clients there is no estimate.
            "stream_weekly_traffic": None,
            "subscriber_count": counts.get(stream.id, 0),
        }
        for name, group_id in zip(STREAM_GROUP_SETTINGS, values, strict=True):
            item[name] = rendered[group_id]
        if include_default:
            item["is_default"] = stream.id in defaults
        result.append(item)
    return result


def format_stream(session: Session, stream: Stream) -> dict[str, Any]:
    return format_streams(session, [stream])[0]
