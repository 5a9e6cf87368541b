"""Message reads: checking what clients send, who may see a message, and message objects.

A message is stored once; each user who has it in their history has a ``UserMessage`` row
with their flags. Channel messages sent before a user subscribed have no row for them, yet
the user may read them when the channel's history is shared ("historical" messages, shown
as read). Direct-message conversations are ``DirectMessageGroup`` recipients whose
members are the users subscribed to them.

Message objects are built in two steps: ``wide_message_dicts`` gathers everything about
a batch of messages once (rendered and raw content, sender, recipients, reactions), and
``finalize_message`` cuts one client's view out of it (``apply_markdown``,
``client_gravatar``, empty-topic display, flags). Message events carry the wide form's
extra parts in ``internal`` and are finalized per client queue by
``message_event_for_client``.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import func, literal, select
from sqlalchemy.orm import Session

from palaver.lib.avatars import avatar_url, hosted_by_gravatar
from palaver.lib.channels import (
    Viewer,
    first_unprintable,
    has_content_access,
    viewer_for,
)
from palaver.lib.conversation_muting import conversation_muting
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import MAX_ID, get_row, storable_ids
from palaver.lib.limits import MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH
from palaver.lib.linkifiers import linkifiers_for_realm
from palaver.lib.markdown import (
    GroupRef,
    MarkdownContext,
    RenderResult,
    StreamRef,
    UserRef,
    possible_channel_names,
    possible_group_names,
    possible_mention_ids,
    possible_mention_names,
    render_message,
    topic_links,
)
from palaver.lib.widgets import submessages_by_message
from palaver.models import UserGroup, UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.messages import (
    ANY_MENTION_FLAGS,
    CLIENT_FLAGS,
    WILDCARD_FLAGS,
    DirectMessageGroup,
    Message,
    MessageFlag,
    Reaction,
    UserMessage,
)
from palaver.timeutil import to_timestamp

if TYPE_CHECKING:
    from palaver.events.queues import ClientDescriptor
    from palaver.lib.narrow import NarrowFilter

# How clients without the empty_topic_name capability see the empty topic; sending to a
# topic of this name (or Zulip's legacy "(no topic)") sends to the empty topic.
EMPTY_TOPIC_DISPLAY_NAME = "general chat"
_EMPTY_TOPIC_ALIASES = frozenset({"(no topic)", EMPTY_TOPIC_DISPLAY_NAME})

# A wildcard mention notifying more people than this needs can_mention_many_users_group.
WILDCARD_MENTION_THRESHOLD = 15

# "newest" as an anchor: past any message ID that will ever exist (Zulip's value).
LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000
MAX_MESSAGES_PER_FETCH = 5000

# Flags of a message the user may read but never received: read, and "historical".
DEFAULT_HISTORICAL_FLAGS = MessageFlag.READ | MessageFlag.HISTORICAL

FLAG_BITS: Mapping[str, MessageFlag] = dict(CLIENT_FLAGS)
EDITABLE_FLAGS = frozenset({"read", "starred", "collapsed"})
# Flags clients know but cannot set themselves.
READ_ONLY_FLAGS = frozenset(FLAG_BITS) - EDITABLE_FLAGS | {"wildcard_mentioned"}

INVALID_MESSAGE = "Invalid message(s)"

_USER_AGENT_NAME = re.compile(r"^([^/ ]*[^0-9/(]*)")


def flag_names(bits: int) -> list[str]:
    """The flags clients see for a flag bitfield, with the legacy ``wildcard_mentioned``."""
    names = [name for name, bit in CLIENT_FLAGS if bits & bit]
    if bits & WILDCARD_FLAGS:
        names.append("wildcard_mentioned")
    return names


def invalid_message() -> JsonableError:
    return JsonableError(INVALID_MESSAGE)


# Checking what clients send -----------------------------------------------------------------


def _truncate(text: str, limit: int, marker: str) -> str:
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


def normalize_content(content: str) -> str:
    """Message content as stored: trimmed, and cut (not refused) past the length limit."""
    content = content.rstrip().lstrip("\n")
    if not content:
        raise JsonableError("Message must not be empty")
    if "\x00" in content:
        raise JsonableError("Message must not contain null bytes")
    return _truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]")


def normalize_topic(topic: str) -> str:
    """A topic as stored: trimmed, printable, shortened with "..." past the length limit."""
    topic = topic.strip()
    position = first_unprintable(topic)
    if position is not None:
        raise JsonableError(f"Invalid character in topic, at position {position}!")
    if topic in _EMPTY_TOPIC_ALIASES:
        return ""
    return _truncate(topic, MAX_TOPIC_LENGTH, "...")


def topic_for_lookup(topic: str) -> str:
    """A topic named by a client (narrows, mark as read): the display name means ""."""
    topic = topic.strip()
    return "" if topic in _EMPTY_TOPIC_ALIASES else topic


def display_topic(topic: str, allow_empty_topic_name: bool) -> str:
    return EMPTY_TOPIC_DISPLAY_NAME if topic == "" and not allow_empty_topic_name else topic


def client_name_from_user_agent(user_agent: str) -> str:
    """The "client" shown on messages: the product name a User-Agent starts with."""
    match = _USER_AGENT_NAME.match(user_agent.strip())
    name = match.group(1).strip() if match else ""
    return name[:30] or "Unspecified"


@dataclass(frozen=True)
class ChannelTarget:
    """A channel message's address, named by the client."""

    topic: str
    stream_id: int | None = None
    stream_name: str | None = None


@dataclass(frozen=True)
class DirectTarget:
    """A direct message's other participants, by ID or by email."""

    user_ids: tuple[int, ...] = ()
    emails: tuple[str, ...] = ()


SendTarget = ChannelTarget | DirectTarget


def parse_send_target(message_type: str, to: str | int | list[int | str], topic: str | None) -> SendTarget:
    """Read POST /messages' ``type``/``to``/``topic`` as Zulip clients send them."""
    if message_type in ("stream", "channel"):
        if isinstance(to, list):
            # Legacy clients send a one-element JSON list holding the name or ID.
            if len(to) != 1:
                raise JsonableError("Expected exactly one channel")
            to = to[0]
        if topic is None:
            raise JsonableError("Missing topic")
        if isinstance(to, int):
            return ChannelTarget(topic=topic, stream_id=to)
        name = to.strip()
        if not name:
            raise JsonableError("Missing channel")
        return ChannelTarget(topic=topic, stream_name=name)
    if message_type in ("private", "direct"):
        if isinstance(to, int):
            return DirectTarget(user_ids=(to,))
        if isinstance(to, str):
            # A comma-separated list of emails (the oldest form clients use).
            to = [part for part in (p.strip() for p in to.split(",")) if part]
        if not to:
            raise JsonableError("Message must have recipients")
        if all(isinstance(item, int) for item in to):
            return DirectTarget(user_ids=tuple(dict.fromkeys(int(i) for i in to)))
        if all(isinstance(item, str) for item in to):
            emails = tuple(dict.fromkeys(str(e).strip() for e in to if str(e).strip()))
            if not emails:
                raise JsonableError("Message must have recipients")
            return DirectTarget(emails=emails)
        raise JsonableError("Recipient lists may contain emails or user IDs, but not both.")
    raise JsonableError("Invalid message type")


# Conversations ------------------------------------------------------------------------------


def dm_group_hash(user_ids: Iterable[int]) -> str:
    joined = ",".join(str(i) for i in sorted(set(user_ids)))
    return hashlib.sha1(joined.encode(), usedforsecurity=False).hexdigest()


def get_dm_group(session: Session, user_ids: Iterable[int]) -> DirectMessageGroup | None:
    return session.scalars(
        select(DirectMessageGroup).where(DirectMessageGroup.huddle_hash == dm_group_hash(user_ids))
    ).one_or_none()


def conversation_member_ids(session: Session, recipient_ids: Iterable[int]) -> dict[int, list[int]]:
    """Members of direct-message conversations by recipient ID, in ID order."""
    ids = set(recipient_ids)
    members: dict[int, list[int]] = {i: [] for i in ids}
    if not ids:
        return members
    rows = session.execute(
        select(Subscription.recipient_id, Subscription.user_profile_id)
        .where(Subscription.recipient_id.in_(ids))
        .order_by(Subscription.user_profile_id)
    )
    for recipient_id, user_id in rows:
        members[recipient_id].append(user_id)
    return members


def streams_by_recipient(session: Session, recipient_ids: Iterable[int]) -> dict[int, Stream]:
    ids = set(recipient_ids)
    if not ids:
        return {}
    result: dict[int, Stream] = {}
    for stream in session.scalars(select(Stream).where(Stream.recipient_id.in_(ids))):
        assert stream.recipient_id is not None
        result[stream.recipient_id] = stream
    return result


def stream_for_message(session: Session, message: Message) -> Stream:
    stream = session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
    return stream


# Access -------------------------------------------------------------------------------------


def can_access_stream_history(viewer: Viewer, stream: Stream) -> bool:
    """Whether the user may read the channel's messages from before they subscribed."""
    if stream.is_web_public:
        return True
    return stream.history_public_to_subscribers and has_content_access(viewer, stream)


def bulk_access_message_ids(session: Session, user: UserProfile, message_ids: Collection[int]) -> set[int]:
    """The messages among these the user may read: received ones, or shared channel history."""
    ids = set(storable_ids(message_ids))
    if not ids:
        return set()
    received = set(
        session.scalars(
            select(UserMessage.message_id).where(
                UserMessage.user_profile_id == user.id, UserMessage.message_id.in_(ids)
            )
        )
    )
    rest = ids - received
    if not rest:
        return received
    rows = session.execute(
        select(Message.id, Message.recipient_id).where(
            Message.id.in_(rest), Message.realm_id == user.realm_id, Message.is_channel_message
        )
    ).all()
    streams = streams_by_recipient(session, {r for _, r in rows})
    viewer = viewer_for(session, user)
    allowed = {recipient_id for recipient_id, s in streams.items() if can_access_stream_history(viewer, s)}
    return received | {message_id for message_id, recipient_id in rows if recipient_id in allowed}


def access_message(
    session: Session, user: UserProfile, message_id: int
) -> tuple[Message, UserMessage | None]:
    """A message the user may read, with their row for it; missing and hidden look the same."""
    message = get_row(session, Message, message_id)
    if message is None or message.realm_id != user.realm_id:
        raise invalid_message()
    user_message = session.scalars(
        select(UserMessage).where(
            UserMessage.user_profile_id == user.id, UserMessage.message_id == message_id
        )
    ).one_or_none()
    if user_message is not None:
        return message, user_message
    if message.is_channel_message and can_access_stream_history(
        viewer_for(session, user), stream_for_message(session, message)
    ):
        return message, None
    raise invalid_message()


# Message objects ----------------------------------------------------------------------------

# Keys of a wide message dict that are not part of the client's message object.
_WIDE_ONLY_KEYS = ("raw_content", "rendered_content", "avatar_computable")


def _display_recipient_user(user: UserProfile) -> dict[str, Any]:
    return {"id": user.id, "email": user.email, "full_name": user.full_name, "is_mirror_dummy": False}


def format_reactions(reactions: Iterable[Reaction]) -> list[dict[str, Any]]:
    return [
        {
            "emoji_name": r.emoji_name,
            "emoji_code": r.emoji_code,
            "reaction_type": r.reaction_type,
            "user_id": r.user_profile_id,
        }
        for r in reactions
    ]


def wide_message_dicts(
    session: Session, messages: Sequence[Message], *, allow_edit_history: bool = True
) -> dict[int, dict[str, Any]]:
    """Everything any client may need about these messages, fetched in a few queries."""
    if not messages:
        return {}
    user_ids = {m.sender_id for m in messages}
    dm_recipients = {m.recipient_id for m in messages if not m.is_channel_message}
    members = conversation_member_ids(session, dm_recipients)
    user_ids.update(uid for ids in members.values() for uid in ids)
    users = {u.id: u for u in session.scalars(select(UserProfile).where(UserProfile.id.in_(user_ids)))}
    streams = streams_by_recipient(session, {m.recipient_id for m in messages if m.is_channel_message})
    reactions: dict[int, list[Reaction]] = defaultdict(list)
    for reaction in session.scalars(
        select(Reaction).where(Reaction.message_id.in_([m.id for m in messages])).order_by(Reaction.id)
    ):
        reactions[reaction.message_id].append(reaction)
    result = {
        message.id: _wide_message_dict(
            message, users, streams, members, reactions.get(message.id, []), allow_edit_history
        )
        for message in messages
    }
    # Widgets' data (lib/widgets.py).
    for message_id, submessages in submessages_by_message(session, result).items():
        result[message_id]["submessages"] = submessages
    return result


def new_message_wide_dict(
    message: Message, sender: UserProfile, stream: Stream | None, dm_members: Iterable[UserProfile] = ()
) -> dict[str, Any]:
    """``wide_message_dicts`` of a message being sent, from what sending already loaded.

    A new message has no reactions or edits yet; ``dm_members`` are the conversation's
    members (sender included) for a direct message.
    """
    users = {sender.id: sender, **{u.id: u for u in dm_members}}
    streams: dict[int, Stream] = {}
    members: dict[int, list[int]] = {}
    if stream is not None:
        streams[message.recipient_id] = stream
    else:
        members[message.recipient_id] = sorted(users)
    return _wide_message_dict(message, users, streams, members, [], True)


def _wide_message_dict(
    message: Message,
    users: Mapping[int, UserProfile],
    streams: Mapping[int, Stream],
    members: Mapping[int, list[int]],
    reactions: Iterable[Reaction],
    allow_edit_history: bool,
) -> dict[str, Any]:
    sender = users[message.sender_id]
    item: dict[str, Any] = {
        "id": message.id,
        "sender_id": sender.id,
        "content": message.rendered_content or "",
        "content_type": "text/html",
        "recipient_id": message.recipient_id,
        "timestamp": to_timestamp(message.date_sent),
        "client": message.sending_client,
        "subject": message.subject,
        "topic_links": topic_links(message.subject, ()) if message.is_channel_message else [],
        "is_me_message": _is_me_message(message.content),
        "reactions": format_reactions(reactions),
        "submessages": [],
        "sender_full_name": sender.full_name,
        "sender_email": sender.email,
        "sender_realm_str": sender.realm.string_id,
        "avatar_url": avatar_url(sender),
        "raw_content": message.content,
        # Clients computing Gravatar URLs need the real address, shown as sender_email.
        "avatar_computable": hosted_by_gravatar(sender) and sender.email == sender.delivery_email,
    }
    if message.is_channel_message:
        stream = streams[message.recipient_id]
        item["type"] = "stream"
        item["display_recipient"] = stream.name
        item["stream_id"] = stream.id
    else:
        item["type"] = "private"
        item["display_recipient"] = [
            _display_recipient_user(users[uid]) for uid in members.get(message.recipient_id, [])
        ]
    if message.edit_history is not None and allow_edit_history:
        item["edit_history"] = orjson.loads(message.edit_history)
    if message.last_edit_time is not None:
        item["last_edit_timestamp"] = to_timestamp(message.last_edit_time)
    if message.last_moved_time is not None:
        item["last_moved_timestamp"] = to_timestamp(message.last_moved_time)
    return item


def _is_me_message(content: str) -> bool:
    return content.startswith("/me ") and "\n" not in content


def finalize_message(
    wide: Mapping[str, Any],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    flags: list[str] | None = None,
) -> dict[str, Any]:
    """One client's view of a wide message dict."""
    message = {k: v for k, v in wide.items() if k not in _WIDE_ONLY_KEYS}
    if not apply_markdown:
        message["content"] = wide["raw_content"]
        message["content_type"] = "text/x-markdown"
    if client_gravatar and wide.get("avatar_computable"):
        message["avatar_url"] = None
    if message["type"] == "stream":
        message["subject"] = display_topic(message["subject"], allow_empty_topic_name)
    if "edit_history" in message and not allow_empty_topic_name:
        message["edit_history"] = [
            {k: display_topic(v, False) if k in ("topic", "prev_topic") else v for k, v in entry.items()}
            for entry in message["edit_history"]
        ]
    if flags is not None:
        message["flags"] = flags
    return message


def message_event_for_client(client: ClientDescriptor, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """What one client queue receives of a published ``message`` event, or None.

    For the queue layer (``events/queues.py``), which hands every message event for every
    queue here: it applies the queue's narrow and options and strips ``internal``.
    """
    from palaver.lib.narrow import message_matches_narrow

    internal: Mapping[str, Any] = event.get("internal") or {}
    if internal.get("broadcast") and client.user_id in internal.get("skip_broadcast_user_ids", ()):
        return None  # this user gets the message, with their own flags, in another event
    message = dict(event["message"])
    flags = list(event.get("flags", []))
    if client.narrow and not message_matches_narrow(client.narrow, message, flags, client.user_id):
        return None
    if not client.apply_markdown:
        message["content"] = internal.get("raw_content", message["content"])
        message["content_type"] = "text/x-markdown"
    if client.client_gravatar and internal.get("avatar_computable"):
        message["avatar_url"] = None
    if message.get("type") == "stream":
        message["subject"] = display_topic(message["subject"], client.has_capability("empty_topic_name"))
    result: dict[str, Any] = {k: v for k, v in event.items() if k not in ("internal", "local_message_id")}
    result["message"] = message
    if "local_message_id" in event and internal.get("sender_queue_id") == client.queue_id:
        result["local_message_id"] = event["local_message_id"]
    return result


def message_event_reaches_all_public_streams(event: Mapping[str, Any]) -> bool:
    """Whether ``all_public_streams`` clients get this event though not addressed to them."""
    internal = event.get("internal")
    return bool(
        event.get("type") == "message" and isinstance(internal, Mapping) and internal.get("broadcast")
    )


def messages_by_id(session: Session, message_ids: Iterable[int]) -> dict[int, Message]:
    ids = list(set(message_ids))
    if not ids:
        return {}
    return {m.id: m for m in session.scalars(select(Message).where(Message.id.in_(ids)))}


def format_messages(
    session: Session,
    rows: Sequence[tuple[int, int | None]],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    allow_edit_history: bool,
    messages: Mapping[int, Message] | None = None,
) -> list[dict[str, Any]]:
    """Message objects with flags for (message ID, flags or None if historical) rows."""
    if messages is None:
        messages = messages_by_id(session, [message_id for message_id, _ in rows])
    ordered = [messages[message_id] for message_id, _ in rows if message_id in messages]
    wide = wide_message_dicts(session, ordered, allow_edit_history=allow_edit_history)
    result = []
    for message_id, bits in rows:
        if message_id not in wide:
            continue
        flags = flag_names(DEFAULT_HISTORICAL_FLAGS if bits is None else bits)
        result.append(
            finalize_message(
                wide[message_id],
                apply_markdown=apply_markdown,
                client_gravatar=client_gravatar,
                allow_empty_topic_name=allow_empty_topic_name,
                flags=flags,
            )
        )
    return result


# Per-user reads -----------------------------------------------------------------------------


def unread_message_details(
    session: Session, user: UserProfile, message_ids: Collection[int]
) -> dict[str, dict[str, Any]]:
    """What clients need to count these messages as unread again (flags remove events)."""
    if not message_ids:
        return {}
    rows = session.execute(
        select(
            Message.id, Message.recipient_id, Message.subject, Message.is_channel_message, UserMessage.flags
        )
        .join(UserMessage, UserMessage.message_id == Message.id)
        .where(UserMessage.user_profile_id == user.id, Message.id.in_(message_ids))
    ).all()
    streams = streams_by_recipient(session, {r.recipient_id for r in rows if r.is_channel_message})
    members = conversation_member_ids(session, {r.recipient_id for r in rows if not r.is_channel_message})
    details: dict[str, dict[str, Any]] = {}
    for row in rows:
        item: dict[str, Any]
        if row.is_channel_message:
            item = {"type": "stream", "stream_id": streams[row.recipient_id].id, "topic": row.subject}
        else:
            others = [uid for uid in members.get(row.recipient_id, []) if uid != user.id]
            item = {"type": "private", "user_ids": others}
        if row.flags & ANY_MENTION_FLAGS:
            item["mentioned"] = True
        details[str(row.id)] = item
    return details


# Markdown context -----------------------------------------------------------------------------


def markdown_context(session: Session, sender: UserProfile, content: str, realm_url: str) -> MarkdownContext:
    """What the content may mention or link to, loading only the candidates it names."""
    from palaver.lib.channels import get_streams_by_names, has_metadata_access

    names = possible_mention_names(content)
    ids = set(storable_ids(possible_mention_ids(content)))
    users_by_name: dict[str, UserRef] = {}
    users_by_id: dict[int, UserRef] = {}
    if names:
        lowered = {n.lower() for n in names}
        # SQLite's lower() folds ASCII only: exact names catch the rest as typed.
        rows = session.execute(
            select(UserProfile.id, UserProfile.full_name)
            .where(
                UserProfile.realm_id == sender.realm_id,
                UserProfile.is_active,
                func.lower(UserProfile.full_name).in_(lowered) | UserProfile.full_name.in_(names),
            )
            .order_by(UserProfile.id)
        )
        for user_id, full_name in rows:
            ref = UserRef(user_id, full_name)
            users_by_name.setdefault(full_name.lower(), ref)
            users_by_id[user_id] = ref
    if ids:
        rows = session.execute(
            select(UserProfile.id, UserProfile.full_name).where(
                UserProfile.realm_id == sender.realm_id, UserProfile.id.in_(ids)
            )
        )
        for user_id, full_name in rows:
            users_by_id[user_id] = UserRef(user_id, full_name)

    groups_by_name: dict[str, GroupRef] = {}
    group_names = possible_group_names(content)
    if group_names:
        lowered = {n.lower() for n in group_names}
        for group in session.scalars(
            select(UserGroup).where(
                UserGroup.realm_id == sender.realm_id,
                UserGroup.name.is_not(None),
                UserGroup.deactivated.is_(False),
                func.lower(UserGroup.name).in_(lowered) | UserGroup.name.in_(group_names),
            )
        ):
            assert group.name is not None
            groups_by_name[group.name.lower()] = GroupRef(group.id, group.name)

    streams_by_name: dict[str, StreamRef] = {}
    channel_names = possible_channel_names(content)
    if channel_names:
        viewer = viewer_for(session, sender)
        for key, stream in get_streams_by_names(session, sender.realm_id, channel_names).items():
            # Links to channels the sender cannot see would reveal them.
            if has_metadata_access(viewer, stream):
                streams_by_name[key] = StreamRef(stream.id, stream.name)

    return MarkdownContext(
        realm_url=realm_url,
        sender_id=sender.id,
        sender_full_name=sender.full_name,
        users_by_name=users_by_name,
        users_by_id=users_by_id,
        groups_by_name=groups_by_name,
        streams_by_name=streams_by_name,
        linkifiers=linkifiers_for_realm(session, sender.realm_id),
    )


def render_content(session: Session, sender: UserProfile, content: str, realm_url: str) -> RenderResult:
    from palaver.lib.thumbnails import apply_media_markup

    rendered = render_message(content, markdown_context(session, sender, content, realm_url))
    # Uploaded images show their thumbnails (or a placeholder while they are made).
    return apply_media_markup(session, sender.realm, rendered)


# Fetching -------------------------------------------------------------------------------------


def parse_anchor(anchor: str | int | None, use_first_unread_anchor: bool) -> int | None:
    """The anchor message ID a client asked for; None means "first unread"."""
    if use_first_unread_anchor:
        return None
    if anchor is None:
        raise JsonableError("Missing 'anchor' argument.")
    if anchor == "oldest":
        return 0
    if anchor == "newest":
        return LARGER_THAN_MAX_MESSAGE_ID
    if anchor == "first_unread":
        return None
    if isinstance(anchor, str):
        text = anchor.strip()
        if not re.fullmatch(r"-?\d+", text):
            raise JsonableError("Invalid anchor")
        anchor = int(text)
    # Negative anchors once meant "the oldest"; very large ones "the newest".
    return min(max(anchor, 0), LARGER_THAN_MAX_MESSAGE_ID)


@dataclass
class FetchResult:
    rows: list[tuple[int, int | None]]
    anchor: int
    found_anchor: bool
    found_oldest: bool
    found_newest: bool
    history_limited: bool = False


def first_unread_anchor(session: Session, user: UserProfile, nf: NarrowFilter) -> int:
    """The oldest unread message in the narrow (outside muted channels unless it names one)."""
    from palaver.lib.narrow import narrowed_query

    query, id_column = narrowed_query(user, replace(nf, needs_message=True))
    query = query.where(UserMessage.flags.op("&")(int(MessageFlag.READ)) == 0)
    if not nf.has_channel_term:
        muted = select(Subscription.recipient_id).where(
            Subscription.user_profile_id == user.id, Subscription.active, Subscription.is_muted
        )
        query = query.where(Message.recipient_id.not_in(muted))
    found = session.scalar(query.order_by(id_column.asc()).limit(1).with_only_columns(id_column))
    return LARGER_THAN_MAX_MESSAGE_ID if found is None else int(found)


def fetch_message_rows(
    session: Session,
    user: UserProfile,
    nf: NarrowFilter,
    *,
    anchor: int | None,
    include_anchor: bool,
    num_before: int,
    num_after: int,
) -> FetchResult:
    """Up to ``num_before`` messages before the anchor, it, and ``num_after`` after, oldest first.

    Each side fetches one row more than asked for, to tell whether more exist.
    """
    from palaver.lib.narrow import narrowed_query

    if anchor is None:
        anchor = first_unread_anchor(session, user, nf)
    query, id_column = narrowed_query(user, nf)
    anchored_to_left = anchor == 0
    anchored_to_right = anchor >= LARGER_THAN_MAX_MESSAGE_ID

    before: list[tuple[int, int | None]] = []
    if num_before > 0 and not anchored_to_left:
        before = [
            (r[0], r[1])
            for r in session.execute(
                query.where(id_column <= min(anchor - 1, MAX_ID))
                .order_by(id_column.desc())
                .limit(num_before + 1)
            )
        ]
    anchor_rows: list[tuple[int, int | None]] = []
    after: list[tuple[int, int | None]] = []
    lowest = anchor if include_anchor else anchor + 1
    # IDs are 32-bit columns; PostgreSQL refuses to compare them with larger numbers.
    if not anchored_to_right and lowest <= MAX_ID and (num_after > 0 or include_anchor):
        limit = num_after + 1 + (1 if include_anchor else 0)
        for r in session.execute(query.where(id_column >= lowest).order_by(id_column.asc()).limit(limit)):
            (anchor_rows if r[0] == anchor else after).append((r[0], r[1]))

    found_oldest = anchored_to_left or (num_before > 0 and len(before) <= num_before)
    found_newest = anchored_to_right or (num_after > 0 and len(after) <= num_after)
    rows = [*reversed(before[:num_before]), *anchor_rows, *after[:num_after]]
    return FetchResult(rows, anchor, bool(anchor_rows), found_oldest, found_newest)


def fetch_rows_by_ids(
    session: Session, user: UserProfile, nf: NarrowFilter, message_ids: Collection[int]
) -> list[tuple[int, int | None]]:
    from palaver.lib.narrow import narrowed_query

    ids = set(storable_ids(message_ids))
    if not ids:
        return []
    query, id_column = narrowed_query(user, nf)
    return [(r[0], r[1]) for r in session.execute(query.where(id_column.in_(ids)).order_by(id_column.asc()))]


@dataclass(frozen=True)
class FormatOptions:
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


def get_messages(
    session: Session,
    user: UserProfile,
    *,
    narrow: Sequence[Any] | None,
    anchor: int | None,
    include_anchor: bool,
    num_before: int,
    num_after: int,
    message_ids: Collection[int] | None,
    options: FormatOptions,
) -> dict[str, Any]:
    """The body of GET /messages."""
    from palaver.lib.narrow import build_narrow_filter

    nf = build_narrow_filter(session, user, narrow)
    result: dict[str, Any]
    if message_ids is not None:
        rows = fetch_rows_by_ids(session, user, nf, message_ids)
        result = {"found_anchor": False, "found_oldest": False, "found_newest": False}
    else:
        fetched = fetch_message_rows(
            session,
            user,
            nf,
            anchor=anchor,
            include_anchor=include_anchor,
            num_before=num_before,
            num_after=num_after,
        )
        rows = fetched.rows
        result = {
            "anchor": fetched.anchor,
            "found_anchor": fetched.found_anchor,
            "found_oldest": fetched.found_oldest,
            "found_newest": fetched.found_newest,
        }
    result["history_limited"] = False
    # Loaded once for the message objects and the search highlights.
    messages = messages_by_id(session, [message_id for message_id, _ in rows])
    result["messages"] = format_messages(
        session,
        rows,
        apply_markdown=options.apply_markdown,
        client_gravatar=options.client_gravatar,
        allow_empty_topic_name=options.allow_empty_topic_name,
        allow_edit_history=user.realm.allow_edit_history,
        messages=messages,
    )
    if nf.is_search:
        from palaver.lib.narrow import match_fields

        matches = match_fields(
            session, nf, [message["id"] for message in result["messages"]], messages=messages
        )
        for message in result["messages"]:
            message.update(matches.get(message["id"], {}))
    return result


def get_message(
    session: Session, user: UserProfile, message_id: int, options: FormatOptions
) -> tuple[dict[str, Any], str]:
    """One message as GET /messages/{id} returns it, and its raw Markdown."""
    message, user_message = access_message(session, user, message_id)
    wide = wide_message_dicts(session, [message], allow_edit_history=user.realm.allow_edit_history)
    bits = DEFAULT_HISTORICAL_FLAGS if user_message is None else user_message.flags
    formatted = finalize_message(
        wide[message.id],
        apply_markdown=options.apply_markdown,
        client_gravatar=options.client_gravatar,
        allow_empty_topic_name=options.allow_empty_topic_name,
        flags=flag_names(bits),
    )
    return formatted, message.content


def messages_matching_narrow(
    session: Session, user: UserProfile, message_ids: Collection[int], narrow: Sequence[Any]
) -> dict[str, dict[str, str]]:
    """For GET /messages/matches_narrow: which of the user's received messages match."""
    from palaver.lib.narrow import build_narrow_filter, match_fields

    # Only messages the user received, as the narrow applies to their own history.
    nf = replace(build_narrow_filter(session, user, narrow), include_history=False)
    rows = fetch_rows_by_ids(session, user, nf, message_ids)
    matches = match_fields(session, nf, [message_id for message_id, _ in rows])
    return {str(message_id): fields for message_id, fields in matches.items()}


def get_topic_history(
    session: Session, user: UserProfile, stream: Stream, *, allow_empty_topic_name: bool
) -> list[dict[str, Any]]:
    """A channel's topics the user may see, newest first, each named as in its latest message."""
    lowered = func.lower(Message.subject)
    query = (
        select(func.max(Message.id))
        .where(Message.recipient_id == stream.recipient_id)
        .group_by(lowered)
        .order_by(func.max(Message.id).desc())
    )
    if not stream.history_public_to_subscribers:
        # Protected history: only topics of messages the user received.
        query = query.join(UserMessage, UserMessage.message_id == Message.id).where(
            UserMessage.user_profile_id == user.id
        )
    max_ids = [int(i) for i in session.scalars(query)]
    names = {
        r.id: r.subject
        for r in session.execute(select(Message.id, Message.subject).where(Message.id.in_(max_ids)))
    }
    return [
        {"max_id": max_id, "name": display_topic(names[max_id], allow_empty_topic_name)} for max_id in max_ids
    ]


def topic_participant_ids(session: Session, recipient_id: int, topic: str) -> set[int]:
    """Who sent or reacted to messages in the topic (for topic wildcard mentions)."""
    in_topic = select(Message.id).where(
        Message.recipient_id == recipient_id, func.lower(Message.subject) == func.lower(literal(topic))
    )
    senders = set(
        session.scalars(
            select(Message.sender_id)
            .where(
                Message.recipient_id == recipient_id,
                func.lower(Message.subject) == func.lower(literal(topic)),
            )
            .distinct()
        )
    )
    reactors = set(
        session.scalars(select(Reaction.user_profile_id).where(Reaction.message_id.in_(in_topic)).distinct())
    )
    return senders | reactors


def topic_exists(session: Session, recipient_id: int, topic: str) -> bool:
    found = session.scalar(
        select(Message.id)
        .where(
            Message.recipient_id == recipient_id, func.lower(Message.subject) == func.lower(literal(topic))
        )
        .limit(1)
    )
    return found is not None


# /register state --------------------------------------------------------------------------------

# Zulip's bound on the unread messages /register lists (the newest ones).
MAX_UNREAD_MESSAGES = 50_000


def unread_msgs_state(session: Session, user: UserProfile, *, allow_empty_topic_name: bool) -> dict[str, Any]:
    """The ``unread_msgs`` object of POST /register."""
    rows = session.execute(
        select(
            Message.id, Message.recipient_id, Message.subject, Message.is_channel_message, UserMessage.flags
        )
        .join(UserMessage, UserMessage.message_id == Message.id)
        .where(UserMessage.user_profile_id == user.id, UserMessage.flags.op("&")(int(MessageFlag.READ)) == 0)
        .order_by(Message.id.desc())
        .limit(MAX_UNREAD_MESSAGES + 1)
    ).all()
    old_unreads_missing = len(rows) > MAX_UNREAD_MESSAGES
    rows = sorted(rows[:MAX_UNREAD_MESSAGES], key=lambda r: r.id)
    streams = streams_by_recipient(session, {r.recipient_id for r in rows if r.is_channel_message})
    members = conversation_member_ids(session, {r.recipient_id for r in rows if not r.is_channel_message})
    by_topic: dict[tuple[int, str], list[int]] = defaultdict(list)
    by_person: dict[int, list[int]] = defaultdict(list)
    by_group: dict[str, list[int]] = defaultdict(list)
    mentions = []
    muting = conversation_muting(session, user.id)
    # Muted conversations stay listed (clients show them) but count for nothing, and only
    # direct mentions in them, not wildcards, are mentions.
    count = 0
    for row in rows:
        muted = row.is_channel_message and muting.is_muted(
            streams[row.recipient_id].id, row.recipient_id, row.subject
        )
        count += not muted
        if row.flags & MessageFlag.MENTIONED or (row.flags & ANY_MENTION_FLAGS and not muted):
            mentions.append(row.id)
        if row.is_channel_message:
            by_topic[(streams[row.recipient_id].id, row.subject)].append(row.id)
            continue
        people = members.get(row.recipient_id, [])
        others = [uid for uid in people if uid != user.id]
        if len(others) <= 1:
            # One-on-one, or with oneself.
            by_person[others[0] if others else user.id].append(row.id)
        else:
            by_group[",".join(str(uid) for uid in people)].append(row.id)
    return {
        "count": count,
        "pms": [
            {"other_user_id": other, "sender_id": other, "unread_message_ids": ids}
            for other, ids in sorted(by_person.items())
        ],
        "streams": [
            {
                "stream_id": stream_id,
                "topic": display_topic(topic, allow_empty_topic_name),
                "unread_message_ids": ids,
            }
            for (stream_id, topic), ids in sorted(by_topic.items())
        ],
        "huddles": [
            {"user_ids_string": key, "unread_message_ids": ids} for key, ids in sorted(by_group.items())
        ],
        "mentions": mentions,
        "old_unreads_missing": old_unreads_missing,
    }


def starred_message_ids(session: Session, user: UserProfile) -> list[int]:
    return list(
        session.scalars(
            select(UserMessage.message_id)
            .where(
                UserMessage.user_profile_id == user.id,
                UserMessage.flags.op("&")(int(MessageFlag.STARRED)) != 0,
            )
            .order_by(UserMessage.message_id)
        )
    )
