"""Email waiting to go out, and the state of the jobs that produce email.

``email_outbox`` rows are written in the transaction of the action that causes the email
and delivered later by the worker (``workers/email.py``): a crash or an SMTP outage between
the two loses nothing. ``missed_message_email`` holds messages a user may need to hear of
by email once their batching period has passed.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class EmailOutbox(Base):
    __tablename__ = "email_outbox"
    # The worker scans for rows due and not yet sent or abandoned.
    __table_args__ = (Index("ix_email_outbox_due", "sent_at", "failed", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int | None] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), default=None)
    to_address: Mapped[str] = mapped_column(String(254))
    # Templates under templates/email/: <template>.subject.txt, .txt and .html.
    template: Mapped[str] = mapped_column(String(60))
    # JSON object the templates are rendered with (at delivery, so links use current settings).
    context: Mapped[str] = mapped_column(Text)
    from_name: Mapped[str | None] = mapped_column(String(100), default=None)
    reply_to: Mapped[str | None] = mapped_column(String(254), default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempts: Mapped[int] = mapped_column(default=0)
    # A worker holds a row until this time; a worker that died mid-send lets it go again.
    claimed_until: Mapped[datetime | None] = mapped_column(default=None)
    sent_at: Mapped[datetime | None] = mapped_column(default=None)
    failed: Mapped[bool] = mapped_column(default=False)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    message_id_header: Mapped[str | None] = mapped_column(String(254), default=None)


class MissedMessageEmail(Base):
    """A message that may warrant an email to an offline recipient, due after batching."""

    __tablename__ = "missed_message_email"
    __table_args__ = (Index("ix_missed_message_email_scheduled_at", "scheduled_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"))
    # "private_message", "mentioned", "stream_wildcard_mentioned", "followed_topic", ...
    trigger: Mapped[str] = mapped_column(String(40))
    scheduled_at: Mapped[datetime]


class EmailDigestState(Base):
    """When each user was last sent a digest."""

    __tablename__ = "email_digest_state"

    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    )
    last_sent: Mapped[datetime]


class MissedMessageAddress(Base):
    """A reply-by-email address: mm<token>@<gateway domain> answers one conversation as one user."""

    __tablename__ = "missed_message_address"

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(40), unique=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    # A message of the conversation: replies go to its channel and topic, or its DM group.
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"))
    created: Mapped[datetime] = mapped_column(default=utcnow)


class ChannelEmailAddress(Base):
    """A channel's incoming address: mail to <name>.<token>@<gateway domain> posts as ``sender``."""

    __tablename__ = "channel_email_address"

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    stream_id: Mapped[int] = mapped_column(ForeignKey("stream.id", ondelete="CASCADE"))
    creator_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    sender_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    token: Mapped[str] = mapped_column(String(40), unique=True)
    created: Mapped[datetime] = mapped_column(default=utcnow)
