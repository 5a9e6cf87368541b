"""The email gateway: channel email addresses, and turning incoming mail into messages.

Two kinds of address reach the gateway (``palaver email-gateway``):

- ``mm<token>@<gateway domain>``: the reply address of a missed-message email. The reply
  becomes a message from that email's recipient, in the conversation it was about.
- ``<channel-slug>.<token>[.show-sender]@<gateway domain>``: a channel's address
  (``GET /streams/{stream_id}/email_address``). The mail becomes a message in the channel,
  topic from the Subject, sent as the address's sender (the realm's Email Gateway bot by
  default, the requesting user, or one of their bots).

Attachments are saved as uploads owned by the sender and linked from the message.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.actions.attachments import do_upload_file
from palaver.actions.messages import SendContext, do_send_message
from palaver.actions.user_creation import get_or_create_bot
from palaver.actions.users import do_create_user
from palaver.config import Settings
from palaver.db.database import Database
from palaver.db.transaction import transaction
from palaver.lib.attachments import upload_url
from palaver.lib.channels import access_stream_by_id
from palaver.lib.email.incoming import (
    CHANNEL_TOKEN,
    MM_ADDRESS,
    IncomingEmail,
    parse_email,
    strip_quoted_reply,
    topic_from_subject,
)
from palaver.lib.email.missed import gateway_domain
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import ChannelTarget, DirectTarget, SendTarget
from palaver.lib.realm import get_realm, realm_email_host, realm_url
from palaver.lib.storage import make_storage
from palaver.models import BotType, Realm, UserProfile
from palaver.models.channels import Recipient, Stream
from palaver.models.email_outbox import ChannelEmailAddress, MissedMessageAddress
from palaver.models.messages import Message, UserMessage
from palaver.models.requester import Requester

EMAIL_GATEWAY_BOT_NAME = "Email Gateway"
EMAIL_GATEWAY_LOCAL_PART = "emailgateway"
GATEWAY_CLIENT = "ZulipEmailGateway"


class GatewayError(Exception):
    """Mail the gateway refuses; ``smtp_reply`` is what the SMTP/LMTP receiver answers."""

    def __init__(self, smtp_reply: str) -> None:
        super().__init__(smtp_reply)
        self.smtp_reply = smtp_reply


# The realm's Email Gateway bot ---------------------------------------------------------------


def _gateway_bot_email(email_host: str) -> str:
    return f"{EMAIL_GATEWAY_LOCAL_PART}@{email_host}"


def get_email_gateway_bot(session: Session, realm_id: int, email_host: str) -> UserProfile | None:
    return session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == realm_id,
            UserProfile.is_bot,
            UserProfile.bot_owner_id.is_(None),
            func.lower(UserProfile.delivery_email) == _gateway_bot_email(email_host).lower(),
        )
    ).one_or_none()


def get_or_create_email_gateway_bot(session: Session, realm: Realm, email_host: str) -> UserProfile:
    """The realm's Email Gateway bot, the sender of mailed-in messages, made on first use."""
    return get_or_create_bot(
        session,
        lambda: get_email_gateway_bot(session, realm.id, email_host),
        lambda: do_create_user(
            session,
            realm,
            email=_gateway_bot_email(email_host),
            full_name=EMAIL_GATEWAY_BOT_NAME,
            password_hash=None,
            email_host=email_host,
            bot_type=BotType.GENERIC,
        ),
    )


# Channel addresses ---------------------------------------------------------------------------


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return slug or "channel"


def do_get_channel_email_address(
    session: Session, user: Requester, stream_id: int, sender_id: int | None, settings: Settings
) -> str:
    """The channel's address for mail sent as ``sender_id`` (default: the Email Gateway bot)."""
    with transaction(session):
        stream = access_stream_by_id(session, user, stream_id, require_content_access=True)
        domain = gateway_domain(settings)
        if domain is None:
            raise JsonableError("The email gateway is not set up on this server")
        realm = get_realm(session, user.realm_id)
        email_host = realm_email_host(settings, realm)
        gateway_bot = get_or_create_email_gateway_bot(session, realm, email_host)
        if sender_id is None or sender_id == gateway_bot.id:
            sender = gateway_bot
        else:
            candidate = session.get(UserProfile, sender_id) if 0 < sender_id < 2**31 else None
            allowed = candidate is not None and (
                candidate.id == user.user_id or (candidate.is_bot and candidate.bot_owner_id == user.user_id)
            )
            if candidate is None or candidate.realm_id != user.realm_id or not allowed:
                raise JsonableError("Invalid user ID")
            sender = candidate
        row = session.scalars(
            select(ChannelEmailAddress).where(
                ChannelEmailAddress.stream_id == stream.id,
                ChannelEmailAddress.creator_id == user.user_id,
                ChannelEmailAddress.sender_id == sender.id,
            )
        ).first()
        if row is None:
            row = ChannelEmailAddress(
                realm_id=user.realm_id,
                stream_id=stream.id,
                creator_id=user.user_id,
                sender_id=sender.id,
                token=secrets.token_hex(16),
            )
            session.add(row)
            session.flush()
        return f"{_slug(stream.name)}.{row.token}@{domain}"


# Receiving -----------------------------------------------------------------------------------


@dataclass
class _Route:
    sender: UserProfile
    target: SendTarget
    show_sender: bool = False


def _route_for(session: Session, recipient: str) -> _Route:
    local = recipient.rpartition("@")[0].lower()
    if match := MM_ADDRESS.match(local):
        address = session.scalars(
            select(MissedMessageAddress).where(MissedMessageAddress.token == match.group(1))
        ).one_or_none()
        if address is None:
            raise GatewayError("550 5.1.1 Unknown or expired reply address")
        user = session.get(UserProfile, address.user_profile_id)
        message = session.get(Message, address.message_id)
        # An address names one organization's person and conversation, never a mix.
        if user is None or message is None or message.realm_id != user.realm_id:
            raise GatewayError("550 5.1.1 The conversation no longer exists")
        if message.is_channel_message:
            recipient_row = session.get(Recipient, message.recipient_id)
            assert recipient_row is not None
            return _Route(user, ChannelTarget(topic=message.subject, stream_id=recipient_row.type_id))
        people = set(
            session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
        )
        others = tuple(sorted(people - {user.id})) or (user.id,)
        return _Route(user, DirectTarget(user_ids=others))
    segments = local.split(".")
    token = next((s for s in segments if CHANNEL_TOKEN.match(s)), None)
    row = (
        session.scalars(select(ChannelEmailAddress).where(ChannelEmailAddress.token == token)).one_or_none()
        if token is not None
        else None
    )
    if row is None:
        raise GatewayError("550 5.1.1 Unknown recipient address")
    sender = session.get(UserProfile, row.sender_id)
    stream = session.get(Stream, row.stream_id)
    if (
        sender is None
        or stream is None
        or stream.deactivated
        or not sender.realm_id == stream.realm_id == row.realm_id
    ):
        raise GatewayError("550 5.1.1 This channel address no longer works")
    return _Route(sender, ChannelTarget(topic="", stream_id=stream.id), show_sender="show-sender" in segments)


def do_receive_email(settings: Settings, db: Database, raw: bytes, recipient: str) -> int:
    """Post one incoming email to the conversation ``recipient`` names; the message ID."""
    incoming = parse_email(raw)
    with db.session() as session:
        route = _route_for(session, recipient)
        sender = route.sender
        realm = sender.realm
        if not sender.is_active or realm.deactivated:
            raise GatewayError("550 5.1.1 This address's account is deactivated")
        content = _content(settings, session, sender, incoming, route)
        target = route.target
        if isinstance(target, ChannelTarget) and not target.topic:
            target = ChannelTarget(topic=topic_from_subject(incoming.subject), stream_id=target.stream_id)
        context = SendContext(
            realm_url=realm_url(settings, realm),
            email_host=realm_email_host(settings, realm),
            client=GATEWAY_CLIENT,
        )
        try:
            return do_send_message(session, Requester.of(sender), target, content, context)
        except JsonableError as e:
            raise GatewayError(f"550 5.7.1 {e.msg}") from None


def _content(
    settings: Settings, session: Session, sender: UserProfile, incoming: IncomingEmail, route: _Route
) -> str:
    text = strip_quoted_reply(incoming.text)
    parts = [text] if text else []
    if route.show_sender and incoming.from_address:
        parts.insert(0, f"From: {incoming.from_address}")
    limit = settings.max_file_upload_size_mib * 1024 * 1024
    storage = make_storage(settings)
    uploader = Requester.of(sender)
    for attachment in incoming.attachments:
        if len(attachment.data) > limit:
            parts.append(f"({attachment.filename} was too large to attach)")
            continue
        saved = do_upload_file(session, storage, uploader, attachment.filename, attachment.data)
        parts.append(f"[{attachment.filename}]({upload_url(saved.path_id)})")
    return "\n\n".join(parts) or "(No email body)"
