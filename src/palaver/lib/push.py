"""Mobile push notifications: who gets one, what it says, and its encryption per device.

The plaintext is the JSON Zulip's mobile apps decrypt and parse (Zulip's "mobile
notifications" API page; zulip-flutter's ``NotifPayload``): ``type`` ``message`` (a new
message), ``remove`` (messages read, deleted or gone out of reach) or ``test``, always with
``realm_url``, ``realm_name`` and ``user_id``, which the app matches against the account the
push key belongs to. Each device gets its own ciphertext: libsodium's secret box under the
device's push key, sent as standard Base64 of nonce + ciphertext with the key's
``push_key_id``, in the shapes the app reads (``fcm_data``: every value a string, as FCM
requires; ``apns_payload``: ``push_key_id`` a number, with an ``aps`` dictionary that lets
the app's notification service extension run).

Delivery goes through Zulip's push notification service (``lib/push_service.py``) or a relay
of the operator's own (``relay_request``: one JSON POST per device to ``push_relay_url``):

    push_key_id                    which of the device's keys the notification is for
    token_kind, token_id, bouncer_public_key, encrypted_push_registration
                                   the device's token registration; only the relay reads it
    encrypted_data                 standard Base64 of nonce + ciphertext of the JSON payload
    fcm_data / apns_payload        the exact data to hand FCM or APNs for this device
    priority                       "high" for a new message, "normal" for a removal

Sending goes over the network, so it never happens inside a database transaction (a
rollback cannot recall a notification) or a request: the push worker (``workers/push.py``)
does it after commit, and a failure is logged, never raised into the write that caused it.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.conversation_muting import is_muted_conversation
from palaver.lib.devices import SECRETBOX_KEY_PREFIX
from palaver.lib.presence import OFFLINE_THRESHOLD_SECONDS
from palaver.lib.user_groups import recursive_member_ids
from palaver.lib.user_topics import topic_visibility_policies
from palaver.models.channels import Subscription
from palaver.models.devices import Device
from palaver.models.groups import UserGroup
from palaver.models.legacy_push import LegacyPushToken
from palaver.models.messages import MessageFlag, UserMessage
from palaver.models.muted_users import MutedUser
from palaver.models.presence import UserPresence
from palaver.models.user_topics import VisibilityPolicy
from palaver.models.users import UserProfile

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("palaver.push")

JsonDict = dict[str, Any]

# Seconds: the whole request, and connecting.
RELAY_TIMEOUT_SECONDS = 10.0
RELAY_CONNECT_TIMEOUT_SECONDS = 5.0

# The plain-text content is cut to this many characters, with an ellipsis (as Zulip does:
# APNs caps a payload at 4 KiB, and a notification shows a few lines at most).
PUSH_CONTENT_LIMIT = 200
# A removal names at most this many messages, the newest (as Zulip's service truncates).
MAX_REMOVE_MESSAGE_IDS = 200


# The plaintext payloads --------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """Which account a notification is for; the app drops one whose identity is not the key's."""

    realm_url: str
    realm_name: str
    user_id: int

    def fields(self) -> JsonDict:
        return {"realm_url": self.realm_url, "realm_name": self.realm_name, "user_id": self.user_id}


def absolute_url(realm_url: str, url: str) -> str:
    return realm_url + url if url.startswith("/") else url


def message_payload(
    identity: Identity, message: Mapping[str, Any], *, group: tuple[int, str] | None = None
) -> JsonDict:
    """A new message's notification, from the message as clients receive it (its wide
    dict with an absolute or server-relative ``avatar_url``)."""
    payload: JsonDict = {
        "type": "message",
        **identity.fields(),
        "sender_id": message["sender_id"],
        "sender_full_name": message["sender_full_name"],
        "sender_avatar_url": absolute_url(identity.realm_url, message.get("avatar_url") or ""),
        "message_id": message["id"],
        "time": message["timestamp"],
        "content": push_content(message.get("content", "")),
    }
    if message["type"] == "stream":
        payload["recipient_type"] = "channel"
        payload["channel_id"] = message["stream_id"]
        payload["channel_name"] = message["display_recipient"]
        payload["topic"] = message["subject"]
    else:
        # Everyone in the conversation, the sender and this user included, sorted.
        ids = {int(r["id"]) for r in message["display_recipient"]} | {message["sender_id"], identity.user_id}
        payload["recipient_type"] = "direct"
        payload["recipient_user_ids"] = sorted(ids)
    if group is not None:
        payload["mentioned_user_group_id"], payload["mentioned_user_group_name"] = group
    return payload


def remove_payload(identity: Identity, message_ids: Iterable[int]) -> JsonDict:
    ids = sorted(set(message_ids))[-MAX_REMOVE_MESSAGE_IDS:]
    return {"type": "remove", **identity.fields(), "message_ids": ids}


def ping_payload(identity: Identity, time: int) -> JsonDict:
    return {"type": "test", **identity.fields(), "time": time}


class _PlainText(HTMLParser):
    """Rendered message HTML as notification text, the way Zulip reduces it: emoji as
    their characters, images as their alt text, quotes as "> " lines, list items on their
    own lines, math as its LaTeX source, a spoiler's hidden part left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0  # depth inside elements whose text is left out
        self._stack: list[tuple[str, bool]] = []  # tag, whether it started a skip
        self._quote = 0
        self._list_counters: list[int | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        skip = bool(self._skip) or self._open(tag, a, a.get("class", "").split())
        if tag in ("img", "br"):
            return
        if skip and not self._skip:
            self._skip = 1
            self._stack.append((tag, True))
            return
        if self._skip:
            self._skip += 1
        self._stack.append((tag, False))

    def _open(self, tag: str, a: dict[str, str], classes: list[str]) -> bool:
        """Output for an opening tag; whether the element's text is left out."""
        if "spoiler-content" in classes:
            self.parts.append("(…)")
            return True
        if "katex-html" in classes:
            return True
        if "emoji" in classes and tag != "img":
            code = next((c[len("emoji-") :] for c in classes if c.startswith("emoji-")), "")
            try:
                self.parts.append("".join(chr(int(cp, 16)) for cp in code.split("-")))
            except ValueError:
                return False
            return True
        if tag == "annotation":
            # KaTeX keeps the source in <annotation encoding="application/x-tex">.
            self.parts.append("$$")
        elif tag == "img":
            self.parts.append(a.get("alt", ""))
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "blockquote":
            self._quote += 1
        elif tag in ("ul", "ol"):
            start = a.get("start", "")
            self._list_counters.append((int(start) if start.isdigit() else 1) if tag == "ol" else None)
        elif tag == "li":
            self._list_item()
        return False

    def _list_item(self) -> None:
        counter = self._list_counters[-1] if self._list_counters else None
        if counter is None:
            self.parts.append("\n- ")
        else:
            self.parts.append(f"\n{counter}. ")
            self._list_counters[-1] = counter + 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("img", "br"):
            return
        while self._stack:
            open_tag, started = self._stack.pop()
            if self._skip:
                self._skip -= 1
            if open_tag == tag:
                break
            if started:
                self._skip = 0
        if tag == "annotation":
            self.parts.append("$$")
        elif tag == "blockquote":
            self._quote = max(0, self._quote - 1)
        elif tag in ("ul", "ol") and self._list_counters:
            self._list_counters.pop()
        elif tag in ("p", "div", "pre", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._quote:
            data = "".join(f"> {line}\n" for line in data.splitlines() if line.strip())
        self.parts.append(data)


def push_content(rendered: str) -> str:
    """The plain text a notification shows for a rendered message, cut to the limit."""
    parser = _PlainText()
    parser.feed(rendered)
    parser.close()
    text = re.sub(r"\n{2,}", "\n", "".join(parser.parts)).strip()
    if len(text) > PUSH_CONTENT_LIMIT:
        text = text[:PUSH_CONTENT_LIMIT] + "…"
    return text


# Encryption and the shapes the app decrypts ------------------------------------------------


def encrypt_payload(push_key: bytes, payload: JsonDict) -> bytes:
    """Nonce and ciphertext of the payload's JSON under the device's push key."""
    if push_key[0] != SECRETBOX_KEY_PREFIX:
        raise ValueError(f"unsupported push key type 0x{push_key[0]:02x}")
    from nacl.secret import SecretBox  # noqa: PLC0415  (idle servers need no PyNaCl)

    return bytes(SecretBox(push_key[1:]).encrypt(orjson.dumps(payload)))


def fcm_data(push_key_id: int, ciphertext: bytes) -> dict[str, str]:
    """The FCM message's data (the app's ``EncryptedFcmMessage``): strings only."""
    return {"push_key_id": str(push_key_id), "encrypted_data": base64.b64encode(ciphertext).decode()}


def apns_payload(push_key_id: int, ciphertext: bytes, *, alert: bool) -> JsonDict:
    """The APNs payload (the app's ``EncryptedApnsPayload``). A new message's sets
    ``mutable-content`` so the app's service extension decrypts it before it shows; the
    placeholder title is what shows if decrypting fails. A removal is a background push."""
    aps: JsonDict = (
        {"mutable-content": 1, "alert": {"title": "New notification"}} if alert else {"content-available": 1}
    )
    return {"push_key_id": push_key_id, "encrypted_data": base64.b64encode(ciphertext).decode(), "aps": aps}


def is_alert(payload: Mapping[str, Any]) -> bool:
    """Whether the notification shows (new message, test) rather than clears."""
    return payload.get("type") != "remove"


@dataclass(frozen=True)
class PushTarget:
    """What sending to one device needs, read before any network I/O starts."""

    device_id: int
    push_key: bytes
    push_key_id: int
    token_kind: str
    token_id: str
    bouncer_public_key: str
    encrypted_push_registration: str


def relay_request(target: PushTarget, payload: JsonDict) -> JsonDict:
    ciphertext = encrypt_payload(target.push_key, payload)
    alert = is_alert(payload)
    body: JsonDict = {
        "push_key_id": target.push_key_id,
        "token_kind": target.token_kind,
        "token_id": target.token_id,
        "bouncer_public_key": target.bouncer_public_key,
        "encrypted_push_registration": target.encrypted_push_registration,
        "encrypted_data": base64.b64encode(ciphertext).decode(),
        "priority": "high" if alert else "normal",
    }
    if target.token_kind == "apns":
        body["apns_payload"] = apns_payload(target.push_key_id, ciphertext, alert=alert)
    else:
        body["fcm_data"] = fcm_data(target.push_key_id, ciphertext)
    return body


def push_targets(session: Session, user_id: int, token_id: str | None = None) -> list[PushTarget]:
    """The user's devices that notifications can reach (a key, and a token in use)."""
    query = select(Device).where(
        Device.user_profile_id == user_id, Device.push_key.is_not(None), Device.token_id.is_not(None)
    )
    if token_id is not None:
        query = query.where(Device.token_id == token_id)
    return [
        PushTarget(
            device_id=d.id,
            push_key=d.push_key or b"",
            push_key_id=d.push_key_id or 0,
            token_kind=d.token_kind or "",
            token_id=d.token_id or "",
            bouncer_public_key=d.bouncer_public_key or "",
            encrypted_push_registration=d.encrypted_push_registration or "",
        )
        for d in session.scalars(query.order_by(Device.id))
    ]


def users_with_devices(session: Session, user_ids: Iterable[int]) -> set[int]:
    """Those of the users with a device or legacy token that notifications can reach."""
    ids = list(set(user_ids))
    found: set[int] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        found.update(
            session.scalars(
                select(Device.user_profile_id).where(
                    Device.user_profile_id.in_(chunk),
                    Device.push_key.is_not(None),
                    Device.token_id.is_not(None),
                )
            )
        )
        found.update(
            session.scalars(
                select(LegacyPushToken.user_profile_id).where(LegacyPushToken.user_profile_id.in_(chunk))
            )
        )
    return found


def realm_has_devices(session: Session, realm_id: int) -> bool:
    """Whether anyone in the organization could receive a notification (one indexed probe)."""
    device = session.scalar(
        select(Device.id)
        .join(UserProfile, UserProfile.id == Device.user_profile_id)
        .where(UserProfile.realm_id == realm_id, Device.token_id.is_not(None))
        .limit(1)
    )
    if device is not None:
        return True
    legacy = session.scalar(
        select(LegacyPushToken.id)
        .join(UserProfile, UserProfile.id == LegacyPushToken.user_profile_id)
        .where(UserProfile.realm_id == realm_id)
        .limit(1)
    )
    return legacy is not None


def relay_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """A client for the relay or the service. Each new one loads the CA bundle (~30 ms of
    CPU) and opens its own connection, so the worker keeps one."""
    # httpx (with its CLI's rich and pygments, ~7 MiB) only once there is a device to notify.
    import httpx  # noqa: PLC0415

    timeout = httpx.Timeout(RELAY_TIMEOUT_SECONDS, connect=RELAY_CONNECT_TIMEOUT_SECONDS)
    return httpx.Client(timeout=timeout, transport=transport)


# Who gets a notification -------------------------------------------------------------------

# The triggers, in Zulip's order of precedence (one notification names one reason).
DIRECT_MESSAGE = "direct_message"
MENTION = "mentioned"
TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC = "topic_wildcard_mentioned_in_followed_topic"
STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC = "stream_wildcard_mentioned_in_followed_topic"
TOPIC_WILDCARD_MENTION = "topic_wildcard_mentioned"
STREAM_WILDCARD_MENTION = "stream_wildcard_mentioned"
FOLLOWED_TOPIC = "followed_topic_push_notify"
CHANNEL = "stream_push_notify"


@dataclass(frozen=True)
class RecipientFacts:
    """Everything that decides whether one recipient's devices hear of a message."""

    user_id: int
    sender_id: int
    is_direct: bool
    flags: frozenset[str]
    enable_offline_push_notifications: bool
    enable_online_push_notifications: bool
    # Channel messages: the subscription's choices with the user's defaults filled in.
    channel_push: bool = False
    wildcard_mentions_notify: bool = False
    followed_topic_push: bool = False
    followed_topic_wildcard_mentions_notify: bool = False
    channel_muted: bool = False
    topic_policy: int = VisibilityPolicy.INHERIT
    sender_muted: bool = False
    # Whether the user is away from their other clients (no recent activity reported).
    idle: bool = True


def push_trigger(f: RecipientFacts) -> str | None:
    """Why this recipient gets a notification, or None (Zulip's rules).

    Direct messages and mentions (personal, group, alert words) follow
    ``enable_offline_push_notifications``; wildcard mentions also the (per-channel)
    ``wildcard_mentions_notify``; channel messages the channel's ``push_notifications``;
    followed topics ``enable_followed_topic_push_notifications``. Nothing from a muted
    sender or oneself; wildcard mentions and channel messages nothing in a muted channel or
    topic (a followed or unmuted topic of a muted channel is heard). A user active on
    another client gets nothing unless ``enable_online_push_notifications``.
    """
    if f.user_id == f.sender_id or f.sender_muted or "read" in f.flags:
        return None
    if not f.idle and not f.enable_online_push_notifications:
        return None
    personal = f.enable_offline_push_notifications
    if f.is_direct:
        return DIRECT_MESSAGE if personal else None
    if personal and ("mentioned" in f.flags or "has_alert_word" in f.flags):
        return MENTION
    return _channel_trigger(f)


def _channel_trigger(f: RecipientFacts) -> str | None:
    followed = f.topic_policy == VisibilityPolicy.FOLLOWED
    muted = is_muted_conversation(f.channel_muted, f.topic_policy)
    wildcard = None
    if "topic_wildcard_mentioned" in f.flags:
        wildcard = "topic"
    elif "stream_wildcard_mentioned" in f.flags:
        wildcard = "stream"
    if wildcard and followed and f.followed_topic_wildcard_mentions_notify and f.followed_topic_push:
        return (
            TOPIC_WILDCARD_MENTION_IN_FOLLOWED_TOPIC
            if wildcard == "topic"
            else STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC
        )
    if wildcard and not muted and f.enable_offline_push_notifications and f.wildcard_mentions_notify:
        return TOPIC_WILDCARD_MENTION if wildcard == "topic" else STREAM_WILDCARD_MENTION
    if followed and f.followed_topic_push:
        return FOLLOWED_TOPIC
    if not muted and f.channel_push:
        return CHANNEL
    return None


def recipient_facts(
    session: Session,
    message: Mapping[str, Any],
    flags_by_user: Mapping[int, Sequence[str]],
    *,
    now: datetime,
    has_queues: Any = None,
) -> list[RecipientFacts]:
    """The facts of each given recipient (a few queries for all of them together).

    ``has_queues(user_id)``, when given, says whether the user has an event queue open:
    one with none is away whatever presence says, as in Zulip."""
    user_ids = list(flags_by_user)
    if not user_ids:
        return []
    sender_id = int(message["sender_id"])
    users = {u.id: u for u in session.scalars(select(UserProfile).where(UserProfile.id.in_(user_ids)))}
    muted_sender = set(
        session.scalars(
            select(MutedUser.user_profile_id).where(
                MutedUser.user_profile_id.in_(user_ids), MutedUser.muted_user_id == sender_id
            )
        )
    )
    # Activity reported within presence's window: "active", pushed to only with
    # enable_online_push_notifications.
    recent = now - timedelta(seconds=OFFLINE_THRESHOLD_SECONDS)
    active = set(
        session.scalars(
            select(UserPresence.user_profile_id).where(
                UserPresence.user_profile_id.in_(user_ids), UserPresence.last_active_time >= recent
            )
        )
    )
    is_direct = message["type"] != "stream"
    subs: dict[int, Subscription] = {}
    policies: dict[int, int] = {}
    if not is_direct:
        stream_id = int(message["stream_id"])
        recipient_id = int(message["recipient_id"])
        subs = {
            s.user_profile_id: s
            for s in session.scalars(
                select(Subscription).where(
                    Subscription.recipient_id == recipient_id, Subscription.user_profile_id.in_(user_ids)
                )
            )
        }
        policies = topic_visibility_policies(session, stream_id, str(message["subject"]))
    facts = []
    for user_id in user_ids:
        user = users.get(user_id)
        if user is None or not user.is_active or user.is_bot:
            continue
        idle = user_id not in active or (has_queues is not None and not has_queues(user_id))
        base = {
            "user_id": user_id,
            "sender_id": sender_id,
            "is_direct": is_direct,
            "flags": frozenset(flags_by_user[user_id]),
            "enable_offline_push_notifications": user.enable_offline_push_notifications,
            "enable_online_push_notifications": user.enable_online_push_notifications,
            "sender_muted": user_id in muted_sender,
            "idle": idle,
        }
        sub = subs.get(user_id)
        if not is_direct:
            if sub is None or not sub.active:
                continue
            base.update(
                channel_push=user.enable_stream_push_notifications
                if sub.push_notifications is None
                else sub.push_notifications,
                wildcard_mentions_notify=user.wildcard_mentions_notify
                if sub.wildcard_mentions_notify is None
                else sub.wildcard_mentions_notify,
                followed_topic_push=user.enable_followed_topic_push_notifications,
                followed_topic_wildcard_mentions_notify=user.enable_followed_topic_wildcard_mentions_notify,
                channel_muted=sub.is_muted,
                topic_policy=policies.get(user_id, VisibilityPolicy.INHERIT),
            )
        facts.append(RecipientFacts(**base))
    return facts


_USER_MENTION = re.compile(r'class="user-mention[^"]*"[^>]*data-user-id="(\d+)"')
_GROUP_MENTION = re.compile(r'class="user-group-mention[^"]*"[^>]*data-user-group-id="(\d+)"')


def mentioned_ids(rendered: str) -> tuple[set[int], list[int]]:
    """The users and groups a rendered message mentions by name (not silently)."""
    users = {int(m) for m in _USER_MENTION.findall(rendered)}
    groups = list(dict.fromkeys(int(m) for m in _GROUP_MENTION.findall(rendered)))
    return users, groups


def mentioned_groups(session: Session, group_ids: Sequence[int]) -> list[tuple[int, str, set[int]]]:
    """(ID, name, members with subgroups') of each of the groups, in the order given."""
    rows = session.execute(select(UserGroup.id, UserGroup.name).where(UserGroup.id.in_(group_ids)))
    names = {gid: name for gid, name in rows if name is not None}
    return [(gid, names[gid], recursive_member_ids(session, gid)) for gid in group_ids if gid in names]


def unread_message_ids(session: Session, user_id: int, message_ids: Iterable[int]) -> set[int]:
    """Which of the messages the user has and has not read (read elsewhere: no notification)."""
    return set(
        session.scalars(
            select(UserMessage.message_id).where(
                UserMessage.user_profile_id == user_id,
                UserMessage.message_id.in_(list(message_ids)),
                UserMessage.flags.op("&")(int(MessageFlag.READ)) == 0,
            )
        )
    )


def notified_message_ids(session: Session, user_id: int, message_ids: Iterable[int]) -> list[int]:
    """Which of the messages may still show as notifications on the user's devices."""
    bit = int(MessageFlag.ACTIVE_MOBILE_PUSH_NOTIFICATION)
    ids = list(message_ids)
    found: list[int] = []
    for start in range(0, len(ids), 500):
        found.extend(
            session.scalars(
                select(UserMessage.message_id).where(
                    UserMessage.user_profile_id == user_id,
                    UserMessage.message_id.in_(ids[start : start + 500]),
                    UserMessage.flags.op("&")(bit) != 0,
                )
            )
        )
    return sorted(found)
