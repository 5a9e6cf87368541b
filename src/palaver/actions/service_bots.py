"""What service bots send: replies in the triggering conversation, notes to their owner."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext, do_send_message
from palaver.config import Settings
from palaver.lib.conversations import conversation_member_ids, stream_for_message
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import ChannelTarget, DirectTarget, SendTarget
from palaver.lib.realm import realm_email_host, realm_url
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.models.users import BotType, UserProfile

logger = logging.getLogger("palaver.service_bots")


def _context(settings: Settings, bot: UserProfile) -> SendContext:
    realm = bot.realm
    return SendContext(
        realm_url=realm_url(settings, realm),
        email_host=realm_email_host(settings, realm),
        client="OutgoingWebhookResponse" if bot.bot_type == BotType.OUTGOING_WEBHOOK else "EmbeddedBot",
    )


def reply_target(session: Session, bot: UserProfile, message: Message) -> SendTarget:
    """Where a reply to ``message`` goes: its topic, or its direct-message conversation."""
    if message.is_channel_message:
        stream = stream_for_message(session, message)
        return ChannelTarget(topic=message.subject, stream_id=stream.id)
    members = conversation_member_ids(session, [message.recipient_id]).get(message.recipient_id, [])
    others = tuple(uid for uid in members if uid != bot.id) or (message.sender_id,)
    return DirectTarget(user_ids=others)


def do_send_bot_message(
    session: Session, settings: Settings, bot: UserProfile, target: SendTarget, content: str
) -> int:
    return do_send_message(session, Requester.of(bot), target, content, _context(settings, bot))


def do_notify_bot_owner(session: Session, settings: Settings, bot: UserProfile, content: str) -> int | None:
    """A direct message from the bot to its owner (bots made at the command line have none)."""
    if bot.bot_owner_id is None:
        logger.warning("bot %s has no owner to tell: %s", bot.id, content)
        return None
    try:
        return do_send_bot_message(
            session, settings, bot, DirectTarget(user_ids=(bot.bot_owner_id,)), content
        )
    except JsonableError as e:
        logger.warning("could not tell the owner of bot %s: %s", bot.id, e.msg)
        return None
