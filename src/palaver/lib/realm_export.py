"""Realm exports requested through the API: formatting, what each kind contains, consents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, false, or_, select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib.realm import realm_url
from palaver.models import Realm, UserProfile
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.channels import Stream
from palaver.models.drafts import Draft
from palaver.models.messages import Message, UserMessage
from palaver.models.realm_export import RealmExportRecord, RealmExportType
from palaver.models.saved_snippets import SavedSnippet
from palaver.models.scheduled_messages import ScheduledMessage
from palaver.portability.schema import Restrictions

EXPORT_URL_PREFIX = "/exports/"


def _timestamp(value: datetime | None) -> float | None:
    return None if value is None else value.replace(tzinfo=UTC).timestamp()


def format_export(settings: Settings, realm: Realm, record: RealmExportRecord) -> dict[str, Any]:
    url = None
    if record.storage_key and record.date_succeeded and not record.date_deleted:
        url = f"{realm_url(settings, realm)}{EXPORT_URL_PREFIX}{record.storage_key}"
    return {
        "id": record.id,
        "export_time": _timestamp(record.date_requested),
        "acting_user_id": record.acting_user_id,
        "export_url": url,
        "deleted_timestamp": _timestamp(record.date_deleted),
        "failed_timestamp": _timestamp(record.date_failed),
        "pending": record.pending,
        "export_type": record.export_type,
    }


def realm_exports(session: Session, settings: Settings, realm: Realm) -> list[dict[str, Any]]:
    records = session.scalars(
        select(RealmExportRecord).where(RealmExportRecord.realm_id == realm.id).order_by(RealmExportRecord.id)
    )
    return [format_export(settings, realm, r) for r in records]


def export_consents(session: Session, realm_id: int) -> list[dict[str, Any]]:
    rows = session.execute(
        select(UserProfile.id, UserProfile.allow_private_data_export)
        .where(UserProfile.realm_id == realm_id, UserProfile.is_active, UserProfile.is_bot.is_(False))
        .order_by(UserProfile.id)
    )
    return [{"user_id": user_id, "consented": consented} for user_id, consented in rows]


def export_restrictions(realm_id: int, export_type: int) -> Restrictions:
    """What an export of this type leaves out (``portability.schema.scoped_condition``).

    A public export holds the messages of public channels only, and nobody's drafts,
    scheduled messages or snippets. A standard export adds what users who consented to
    exporting their private data (``allow_private_data_export``) received or wrote.
    """
    public_recipients = select(Stream.recipient_id).where(
        Stream.realm_id == realm_id, Stream.invite_only.is_(False), Stream.recipient_id.is_not(None)
    )
    message: ColumnElement[bool] = Message.recipient_id.in_(public_recipients)
    personal: dict[str, ColumnElement[bool]] = {
        "draft": false(),
        "scheduled_message": false(),
        "saved_snippet": false(),
    }
    if export_type == RealmExportType.STANDARD:
        consenting = select(UserProfile.id).where(
            UserProfile.realm_id == realm_id, UserProfile.allow_private_data_export.is_(True)
        )
        received = select(UserMessage.message_id).where(UserMessage.user_profile_id.in_(consenting))
        message = or_(message, Message.id.in_(received))
        personal = {
            "draft": Draft.user_profile_id.in_(consenting),
            "scheduled_message": ScheduledMessage.sender_id.in_(consenting),
            "saved_snippet": SavedSnippet.user_profile_id.in_(consenting),
        }
    # Files go with the messages that link them (ones never sent stay with their owner).
    linked = select(AttachmentMessage.attachment_id).join(Message, Message.id == AttachmentMessage.message_id)
    attachment = Attachment.id.in_(linked.where(and_(Message.realm_id == realm_id, message)))
    return {"message": message, "attachment": attachment, **personal}
