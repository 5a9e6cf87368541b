"""Reporting a message to the organization's moderators."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.db.transaction import transaction
from palaver.lib.message_access import access_message
from palaver.lib.message_reports import check_report, moderation_channel, report_content, report_topic
from palaver.lib.realm import get_realm
from palaver.models import UserProfile
from palaver.models.requester import Requester


def do_report_message(
    session: Session,
    reporter: Requester,
    message_id: int,
    report_type: str,
    description: str,
    context: SendContext,
) -> int:
    """Post the report to the moderation request channel as the Notification Bot.

    Any user may report a message they can read, their own included (as in Zulip); a
    message they cannot read is refused as if it did not exist. Returns the notice's ID.
    """
    check_report(report_type, description)
    with transaction(session):
        # The realm row: the Notification Bot may be created in it.
        realm = get_realm(session, reporter.realm_id)
        moderation = moderation_channel(session, realm)
        message, _ = access_message(session, reporter, message_id)
        reported = session.get(UserProfile, message.sender_id)
        assert reported is not None
        content = report_content(
            session, reporter, message, reported, report_type, description, context.realm_url
        )
        bot = get_or_create_notification_bot(session, realm, context.email_host)
        return internal_send_stream_message(
            session, bot, moderation, report_topic(reported, moderation), content, context
        )
