"""Channel reads: lookups, who may see what, validation, and the objects clients receive.

Two levels of access, as clients know them: *metadata* access (the channel's name, settings
and subscriber list) and *content* access (its messages). Public channels give both to every
member; private ones give content to subscribers and to the groups that may subscribe, and
metadata also to organization administrators and the channel's own administrators. Guests
see only channels they are subscribed to, and web-public ones.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from operator import attrgetter
from typing import Any, Literal, NamedTuple

from sqlalchemy import Row, func, or_, select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    CREATOR,
    GroupSettingRule,
    groups_containing_user,
    render_group_settings,
)
from palaver.lib.ids import get_row
from palaver.lib.limits import MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH
from palaver.lib.markdown import StreamRef, channel_narrow_url
from palaver.lib.realm import deactivated_user_ids
from palaver.lib.user_groups import NOBODY, recursive_member_ids
from palaver.lib.users import access_user_by_email, access_user_by_id
from palaver.models import Realm, Role, UserGroup, UserProfile
from palaver.models.channels import (
    STREAM_GROUP_SETTINGS,
    TOPICS_POLICIES,
    DefaultStream,
    Stream,
    Subscription,
)
from palaver.models.messages import Message
from palaver.models.presence import UserPresence
from palaver.timeutil import to_timestamp, utcnow

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

IncludeSubscribers = bool | Literal["partial"]

# With include_subscribers=partial, channels with at least this many subscribers get
# ``partial_subscribers`` (bots and recently active users) instead of the full list.
MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE = 250
# Users active this recently are always in ``partial_subscribers``.
PARTIAL_SUBSCRIBERS_ACTIVE_DAYS = 14


class StreamInfo(NamedTuple):
    """A channel's columns without an ORM object.

    POST /register reads every channel of the organization, and loading a thousand mapped
    instances cost about as much as formatting them. Anything reading a channel's
    attributes takes either this or a ``Stream``.
    """

    id: int
    realm_id: int
    name: str
    description: str
    rendered_description: str
    date_created: datetime
    creator_id: int | None
    deactivated: bool
    recipient_id: int | None
    folder_id: int | None
    invite_only: bool
    history_public_to_subscribers: bool
    is_web_public: bool
    message_retention_days: int | None
    topics_policy: str
    first_message_id: int | None
    is_recently_active: bool
    can_add_subscribers_group: int
    can_administer_channel_group: int
    can_create_topic_group: int
    can_delete_any_message_group: int
    can_delete_own_message_group: int
    can_move_messages_out_of_channel_group: int
    can_move_messages_within_channel_group: int
    can_remove_subscribers_group: int
    can_resolve_topics_group: int
    can_send_message_group: int
    can_subscribe_group: int

    @property
    def is_archived(self) -> bool:
        return self.deactivated

    @property
    def is_public(self) -> bool:
        return not self.invite_only


AnyStream = Stream | StreamInfo
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


# Lookups ------------------------------------------------------------------------------------


def get_stream_by_id(session: Session, realm_id: int, stream_id: int) -> Stream | None:
    stream = get_row(session, Stream, stream_id)
    return stream if stream is not None and stream.realm_id == realm_id else None


def get_stream_by_name(session: Session, realm_id: int, name: str) -> Stream | None:
    return session.scalars(
        select(Stream).where(Stream.realm_id == realm_id, func.lower(Stream.name) == name.strip().lower())
    ).one_or_none()


def get_streams_by_names(session: Session, realm_id: int, names: Iterable[str]) -> dict[str, Stream]:
    """Existing channels by lower-cased name."""
    lowered = {n.strip().lower() for n in names}
    if not lowered:
        return {}
    rows = session.scalars(
        select(Stream).where(Stream.realm_id == realm_id, func.lower(Stream.name).in_(lowered))
    )
    return {s.name.lower(): s for s in rows}


def get_subscription(session: Session, user_id: int, stream: Stream) -> Subscription | None:
    return session.scalars(
        select(Subscription).where(
            Subscription.user_profile_id == user_id, Subscription.recipient_id == stream.recipient_id
        )
    ).one_or_none()


def subscribed_stream_ids(session: Session, user_id: int) -> set[int]:
    return set(
        session.scalars(
            select(Stream.id)
            .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
            .where(Subscription.user_profile_id == user_id, Subscription.active)
        )
    )


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


def subscriber_ids(session: Session, stream: Stream) -> set[int]:
    return subscriber_ids_by_stream(session, [stream.id])[stream.id]


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

    user: UserProfile
    subscribed: frozenset[int]
    groups: frozenset[int]

    def is_subscribed(self, stream: AnyStream) -> bool:
        return stream.id in self.subscribed


def viewer_for(session: Session, user: UserProfile) -> Viewer:
    return Viewer(
        user,
        frozenset(subscribed_stream_ids(session, user.id)),
        frozenset(groups_containing_user(session, user.id)),
    )


def has_content_access(viewer: Viewer, stream: AnyStream) -> bool:
    if viewer.is_subscribed(stream):
        return True
    if stream.invite_only:
        return not {stream.can_add_subscribers_group, stream.can_subscribe_group}.isdisjoint(viewer.groups)
    return stream.is_web_public or not viewer.user.is_guest


def can_administer_stream(viewer: Viewer, stream: AnyStream) -> bool:
    return viewer.user.is_realm_admin or stream.can_administer_channel_group in viewer.groups


def has_metadata_access(viewer: Viewer, stream: AnyStream) -> bool:
    if has_content_access(viewer, stream):
        return True
    return stream.invite_only and can_administer_stream(viewer, stream)


def _access_stream(session: Session, user: UserProfile, stream: Stream | None, *, content: bool) -> Stream:
    if stream is not None:
        viewer = viewer_for(session, user)
        allowed = has_content_access(viewer, stream) if content else has_metadata_access(viewer, stream)
        if allowed:
            return stream
    raise JsonableError("Invalid channel ID")


def access_stream_by_id(
    session: Session, user: UserProfile, stream_id: int, *, require_content_access: bool = False
) -> Stream:
    """Fetch a channel the user may see; missing and forbidden look the same."""
    stream = get_stream_by_id(session, user.realm_id, stream_id)
    return _access_stream(session, user, stream, content=require_content_access)


def access_stream_by_name(
    session: Session, user: UserProfile, name: str, *, require_content_access: bool = False
) -> Stream:
    stream = get_stream_by_name(session, user.realm_id, name)
    try:
        return _access_stream(session, user, stream, content=require_content_access)
    except JsonableError:
        raise JsonableError(f"Invalid channel name '{name}'") from None


def access_announcement_channel(session: Session, user: UserProfile, stream_id: int) -> int | None:
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
    users = session.execute(
        select(UserProfile.id, UserProfile.role).where(
            UserProfile.realm_id == stream.realm_id, UserProfile.is_active
        )
    )
    if not stream.invite_only:
        return {uid for uid, role in users if role != Role.GUEST or stream.is_web_public} | subscribers
    granted = subscribers | {uid for uid, role in users if role <= Role.ADMINISTRATOR}
    for setting in ("can_administer_channel_group", "can_add_subscribers_group", "can_subscribe_group"):
        granted |= recursive_member_ids(session, getattr(stream, setting))
    return granted


def get_streams_for_user(
    session: Session,
    user: UserProfile,
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
    session: Session, streams: Sequence[AnyStream], *, include_default: bool = False
) -> list[dict[str, Any]]:
    """The channel objects of GET /streams and of stream events."""
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


def subscription_properties(sub: Subscription | Row[*tuple[Any, ...]]) -> dict[str, Any]:
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


def get_user_subscriptions(session: Session, user: UserProfile) -> list[tuple[Stream, Subscription]]:
    """The user's active subscriptions to channels that are not archived."""
    rows = session.execute(
        select(Stream, Subscription)
        .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
        .where(Subscription.user_profile_id == user.id, Subscription.active, Stream.deactivated.is_(False))
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


def used_colors(session: Session, user_id: int) -> set[str]:
    rows = session.scalars(select(Subscription.color).where(Subscription.user_profile_id == user_id))
    return {c.lower() for c in rows}


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
    realm_allows = viewer.user.realm.can_add_subscribers_group in viewer.groups
    return realm_allows and not viewer.user.is_guest and has_content_access(viewer, stream)


def can_remove_subscribers(viewer: Viewer, stream: Stream, targets: Iterable[UserProfile]) -> bool:
    """Whether the viewer may unsubscribe these other users (their own bots always)."""
    if can_administer_stream(viewer, stream) or stream.can_remove_subscribers_group in viewer.groups:
        return True
    return all(t.id == viewer.user.id or (t.is_bot and t.bot_owner_id == viewer.user.id) for t in targets)


def principals_to_users(
    session: Session, acting_user: UserProfile, principals: Sequence[int] | Sequence[str], *, email_host: str
) -> list[UserProfile]:
    """The active users named by IDs or API emails; anyone else is "No such user"."""
    users: dict[int, UserProfile] = {}
    for principal in principals:
        if isinstance(principal, int):
            user = access_user_by_id(session, acting_user, principal)
        else:
            user = access_user_by_email(session, acting_user, principal, email_host=email_host)
        if not user.is_active:
            raise JsonableError("No such user")
        users[user.id] = user
    return list(users.values())
