"""Messages, each user's copy of them (flags), direct-message groups and emoji reactions."""

from __future__ import annotations

from datetime import datetime
from enum import IntFlag

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base, partial_index
from palaver.timeutil import utcnow

MAX_TOPIC_COLUMN_LENGTH = 60


class MessageFlag(IntFlag):
    """Bits of ``UserMessage.flags``. Values are stored: never renumber, only add."""

    READ = 1
    STARRED = 2
    COLLAPSED = 4
    MENTIONED = 8
    STREAM_WILDCARD_MENTIONED = 16
    TOPIC_WILDCARD_MENTIONED = 32
    HAS_ALERT_WORD = 64
    HISTORICAL = 128
    # Server-side only (never shown to clients): makes "my direct messages" an index scan.
    IS_PRIVATE = 256
    # Server-side only: a mobile notification of the message may still show on the user's
    # devices, so reading or losing the message sends them a removal (workers/push.py).
    ACTIVE_MOBILE_PUSH_NOTIFICATION = 512


# Flags clients see, in the order Zulip lists them; ``wildcard_mentioned`` is derived.
CLIENT_FLAGS: tuple[tuple[str, MessageFlag], ...] = (
    ("read", MessageFlag.READ),
    ("starred", MessageFlag.STARRED),
    ("collapsed", MessageFlag.COLLAPSED),
    ("mentioned", MessageFlag.MENTIONED),
    ("stream_wildcard_mentioned", MessageFlag.STREAM_WILDCARD_MENTIONED),
    ("topic_wildcard_mentioned", MessageFlag.TOPIC_WILDCARD_MENTIONED),
    ("has_alert_word", MessageFlag.HAS_ALERT_WORD),
    ("historical", MessageFlag.HISTORICAL),
)
WILDCARD_FLAGS = MessageFlag.STREAM_WILDCARD_MENTIONED | MessageFlag.TOPIC_WILDCARD_MENTIONED
# is:mentioned matches personal, group and wildcard mentions alike.
ANY_MENTION_FLAGS = MessageFlag.MENTIONED | WILDCARD_FLAGS


class Message(Base):
    __tablename__ = "message"
    __table_args__ = (
        Index("ix_message_realm_id_id", "realm_id", "id"),
        # A channel's (or conversation's) messages in order.
        Index("ix_message_recipient_id_id", "recipient_id", "id"),
        # A topic's messages in order; topics compare case-insensitively.
        Index("ix_message_recipient_id_lower_subject_id", "recipient_id", text("lower(subject)"), "id"),
        Index("ix_message_sender_id_id", "sender_id", "id"),
        # A deleted message's ID is never given to another (migration 0019).
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    sender_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    recipient_id: Mapped[int] = mapped_column(ForeignKey("recipient.id", ondelete="CASCADE"))
    # The topic; "" for direct messages (and for channel messages in the empty topic).
    subject: Mapped[str] = mapped_column(String(MAX_TOPIC_COLUMN_LENGTH), default="")
    content: Mapped[str] = mapped_column(Text)
    rendered_content: Mapped[str | None] = mapped_column(Text, default=None)
    rendered_content_version: Mapped[int | None] = mapped_column(default=None)
    date_sent: Mapped[datetime] = mapped_column(default=utcnow)
    last_edit_time: Mapped[datetime | None] = mapped_column(default=None)
    last_moved_time: Mapped[datetime | None] = mapped_column(default=None)
    # JSON list of edit records, newest first, as clients receive it; None if never edited.
    edit_history: Mapped[str | None] = mapped_column(Text, default=None)
    has_attachment: Mapped[bool] = mapped_column(default=False)
    has_image: Mapped[bool] = mapped_column(default=False)
    has_link: Mapped[bool] = mapped_column(default=False)
    is_channel_message: Mapped[bool] = mapped_column(default=True)
    # The name of the client that sent it (from the User-Agent), as shown in "client".
    sending_client: Mapped[str] = mapped_column(String(30), default="")

    @property
    def topic(self) -> str:
        return self.subject


class UserMessage(Base):
    """One user's copy of a message: that it is in their history, and their flags on it."""

    __tablename__ = "user_message"
    __table_args__ = (
        UniqueConstraint("user_profile_id", "message_id", name="uq_user_message_user_message"),
        Index("ix_user_message_message_id", "message_id"),
        # Partial indexes for the hot per-user queries; both backends support them, and
        # these rows are a small share of the table.
        partial_index(
            "ix_user_message_unread",
            "user_profile_id",
            "message_id",
            sqlite_where="(flags & 1) = 0",
            postgresql_where="(flags & 1) = 0",
        ),
        partial_index(
            "ix_user_message_starred",
            "user_profile_id",
            "message_id",
            sqlite_where="(flags & 2) != 0",
            postgresql_where="(flags & 2) != 0",
        ),
        partial_index(
            "ix_user_message_mentioned",
            "user_profile_id",
            "message_id",
            sqlite_where="(flags & 56) != 0",
            postgresql_where="(flags & 56) != 0",
        ),
        partial_index(
            "ix_user_message_private",
            "user_profile_id",
            "message_id",
            sqlite_where="(flags & 256) != 0",
            postgresql_where="(flags & 256) != 0",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"))
    flags: Mapped[int] = mapped_column(BigInteger, default=0)


class DirectMessageGroup(Base):
    """A direct-message conversation: its members are the users subscribed to its recipient.

    Every conversation, one-on-one and with oneself included, has one, so both directions
    of a conversation share a ``recipient_id``.
    """

    __tablename__ = "direct_message_group"

    id: Mapped[int] = mapped_column(primary_key=True)
    # SHA-1 of the sorted member IDs joined by commas: finds the group of a set of users.
    huddle_hash: Mapped[str] = mapped_column(String(40), unique=True)
    group_size: Mapped[int]
    recipient_id: Mapped[int | None] = mapped_column(
        ForeignKey("recipient.id", ondelete="SET NULL"), default=None
    )


class Reaction(Base):
    __tablename__ = "reaction"
    __table_args__ = (
        UniqueConstraint(
            "user_profile_id",
            "message_id",
            "reaction_type",
            "emoji_code",
            name="uq_reaction_user_message_type_code",
        ),
        Index("ix_reaction_message_id", "message_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"))
    emoji_name: Mapped[str] = mapped_column(Text)
    emoji_code: Mapped[str] = mapped_column(Text)
    # "unicode_emoji", "realm_emoji" or "zulip_extra_emoji".
    reaction_type: Mapped[str] = mapped_column(String(30), default="unicode_emoji")
