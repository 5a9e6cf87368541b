"""Message reports: what may be reported and where, and the notice moderators read.

A report is posted by the Notification Bot to the realm's moderation request channel, in
Zulip's format: a header naming the reporter, the reported user, the conversation and when
the message was sent, the reason and description in a quote block, and the reported message
(truncated so the whole notice fits a message) in a spoiler linking to the original.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib import limits
from palaver.lib.channels import get_stream_by_id
from palaver.lib.conversations import conversation_member_ids
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import truncate
from palaver.lib.notification_bot import (
    dm_message_link,
    message_link_syntax,
    silent_mention,
    unused_fence,
)
from palaver.models import Realm, UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.timeutil import to_iso

# Report types and the reasons moderators read (Zulip's).
REPORT_TYPES = {
    "spam": "Spam",
    "harassment": "Harassment",
    "inappropriate": "Inappropriate content",
    "norms": "Violates community norms",
    "other": "Other reason",
}
MAX_REPORT_DESCRIPTION_LENGTH = 1000
# The reported message is cut so that the description and the notice's own text fit too.
MAX_REPORTED_SNIPPET_LENGTH = limits.MAX_MESSAGE_LENGTH - MAX_REPORT_DESCRIPTION_LENGTH - 500
_TRUNCATED = "\n[message truncated]"

NOT_ENABLED = "Message reporting is not enabled in this organization."
MUST_BE_PRIVATE = "Moderation request channel must be private."


def report_message_types() -> list[dict[str, str]]:
    """``server_report_message_types`` of /register: what clients offer in their report form."""
    return [{"key": key, "name": name} for key, name in REPORT_TYPES.items()]


def check_report(report_type: str, description: str) -> None:
    if report_type not in REPORT_TYPES:
        raise JsonableError("Invalid report_type")
    if len(description) > MAX_REPORT_DESCRIPTION_LENGTH:
        raise JsonableError(f"description is too long (limit: {MAX_REPORT_DESCRIPTION_LENGTH} characters)")
    if report_type == "other" and not description.strip():
        raise JsonableError("An explanation is required.")


def moderation_channel(session: Session, realm: Realm) -> Stream:
    """The channel reports go to; reporting is off without one (or once it is archived)."""
    stream_id = realm.moderation_request_channel_id
    stream = get_stream_by_id(session, realm.id, stream_id) if stream_id is not None else None
    if stream is None or stream.deactivated:
        raise JsonableError(NOT_ENABLED)
    return stream


def check_moderation_channel_private(session: Session, realm_id: int, stream_id: int) -> None:
    stream = get_stream_by_id(session, realm_id, stream_id)
    if stream is not None and not stream.invite_only:
        raise JsonableError(MUST_BE_PRIVATE)


def check_moderation_channel_stays_private(session: Session, stream: Stream) -> None:
    realm = session.get(Realm, stream.realm_id)
    if realm is not None and realm.moderation_request_channel_id == stream.id:
        raise JsonableError(MUST_BE_PRIVATE)


def _names_in_order(mentions: list[str]) -> str:
    """``a and b``; ``a, b, and c`` (as Zulip lists a group conversation's recipients)."""
    *rest, last = sorted(mentions)
    joined = ", ".join(rest) + ("," if len(rest) > 1 else "")
    return f"{joined} and {last}"


def report_topic(reported: UserProfile, moderation: Stream) -> str:
    return "" if moderation.topics_policy == "empty_topic_only" else f"{reported.full_name} moderation"


def report_content(
    session: Session,
    reporter: Requester,
    message: Message,
    reported: UserProfile,
    report_type: str,
    description: str,
    realm_url: str,
) -> str:
    """The moderators' notice of a report, in Zulip's format."""
    by, of = silent_mention(reporter), silent_mention(reported)
    sent_at = f"<time:{to_iso(message.date_sent)}>"
    if message.is_channel_message:
        stream = session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
        header = f"{by} reported a message sent by {of} at {sent_at}."
        link = message_link_syntax(realm_url, stream, message.subject, message.id)
        original = f"Original message at {link}"
    else:
        members = conversation_member_ids(session, [message.recipient_id])[message.recipient_id]
        others = [uid for uid in members if uid != reported.id]
        users = {u.id: u for u in session.scalars(select(UserProfile).where(UserProfile.id.in_(members)))}
        if len(members) > 2:
            recipients = _names_in_order([silent_mention(users[uid]) for uid in others])
            header = f"{by} reported a direct message sent by {of} to {recipients} at {sent_at}."
        elif reported.id != reporter.user_id:
            header = f"{by} reported a direct message sent by {of} at {sent_at}."
        else:
            # Reporting one's own direct message: say to whom it went (oneself, in a self-DM).
            recipient = silent_mention(users[others[0]]) if others else by
            header = f"{by} reported a direct message sent by {of} to {recipient} at {sent_at}."
        original = f"[Original message]({dm_message_link(realm_url, members, message.id)})"
    snippet = truncate(message.content, MAX_REPORTED_SNIPPET_LENGTH, _TRUNCATED)
    fence = unused_fence(snippet)
    reason = REPORT_TYPES[report_type]
    return (
        f"{header}\n```quote\n**{reason}**. {description}\n```\n\n"
        f"{fence} spoiler {original}\n{snippet}\n{fence}\n"
    )
