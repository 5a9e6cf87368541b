"""Channels (streams), their recipients and folders, subscriptions, and default channels."""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.models.names import NameKeyed, name_key_column
from palaver.timeutil import utcnow

# Each names a column of ``Stream`` holding a user_group ID (a named group, or an anonymous
# group for a value given as members and subgroups).
STREAM_GROUP_SETTINGS = (
    "can_add_subscribers_group",
    "can_administer_channel_group",
    "can_create_topic_group",
    "can_delete_any_message_group",
    "can_delete_own_message_group",
    "can_move_messages_out_of_channel_group",
    "can_move_messages_within_channel_group",
    "can_remove_subscribers_group",
    "can_resolve_topics_group",
    "can_send_message_group",
    "can_subscribe_group",
)

TOPICS_POLICIES = ("inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only")


class RecipientType(IntEnum):
    PERSONAL = 1
    STREAM = 2
    DIRECT_MESSAGE_GROUP = 3


class Recipient(Base):
    """What a message is addressed to: one row per channel, per user, per direct-message group.

    ``type_id`` is the ID of the stream, user or direct-message group, depending on ``type``;
    messages and subscriptions point here so that every kind of conversation looks alike.
    """

    __tablename__ = "recipient"
    __table_args__ = (UniqueConstraint("type", "type_id", name="uq_recipient_type_type_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    type: Mapped[int]
    type_id: Mapped[int]


class ChannelFolder(NameKeyed, Base):
    __tablename__ = "channel_folder"
    # Names are unique per realm regardless of case (models/names.py), archived ones included.
    __table_args__ = (Index("uq_channel_folder_realm_name_key", "realm_id", "name_key", unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    name_key: Mapped[str] = name_key_column()
    description: Mapped[str] = mapped_column(Text, default="")
    rendered_description: Mapped[str] = mapped_column(Text, default="")
    date_created: Mapped[datetime] = mapped_column(default=utcnow)
    creator_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    is_archived: Mapped[bool] = mapped_column(default=False)
    order: Mapped[int] = mapped_column(default=0)


class Stream(NameKeyed, Base):
    __tablename__ = "stream"
    __table_args__ = (
        # Names are unique per realm regardless of case (models/names.py), archived channels included.
        Index("uq_stream_realm_name_key", "realm_id", "name_key", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    name_key: Mapped[str] = name_key_column()
    description: Mapped[str] = mapped_column(String(1024), default="")
    rendered_description: Mapped[str] = mapped_column(Text, default="")
    date_created: Mapped[datetime] = mapped_column(default=utcnow)
    creator_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    deactivated: Mapped[bool] = mapped_column(default=False)
    recipient_id: Mapped[int | None] = mapped_column(
        ForeignKey("recipient.id", ondelete="SET NULL"), default=None
    )
    folder_id: Mapped[int | None] = mapped_column(
        ForeignKey("channel_folder.id", ondelete="SET NULL"), default=None, index=True
    )

    invite_only: Mapped[bool] = mapped_column(default=False)
    history_public_to_subscribers: Mapped[bool] = mapped_column(default=True)
    is_web_public: Mapped[bool] = mapped_column(default=False)
    # None inherits the realm's policy; -1 keeps messages forever.
    message_retention_days: Mapped[int | None] = mapped_column(default=None)
    topics_policy: Mapped[str] = mapped_column(String(30), default="inherit")
    # Kept up to date by the message layer.
    first_message_id: Mapped[int | None] = mapped_column(default=None, index=True)
    is_recently_active: Mapped[bool] = mapped_column(default=True)

    can_add_subscribers_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_administer_channel_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_create_topic_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_delete_any_message_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_delete_own_message_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_move_messages_out_of_channel_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_move_messages_within_channel_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_remove_subscribers_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_resolve_topics_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_send_message_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))
    can_subscribe_group: Mapped[int] = mapped_column(ForeignKey("user_group.id"))

    @property
    def is_archived(self) -> bool:
        return self.deactivated

    @property
    def is_public(self) -> bool:
        return not self.invite_only


class Subscription(Base):
    """A user's membership of a recipient, with their personal settings for a channel.

    Unsubscribing clears ``active`` rather than deleting the row, so the user's color and
    notification choices come back if they subscribe again.
    """

    __tablename__ = "subscription"
    __table_args__ = (
        UniqueConstraint("user_profile_id", "recipient_id", name="uq_subscription_user_recipient"),
        # Carries the user: a channel's subscribers are read from the index alone.
        Index("ix_subscription_recipient_active_user", "recipient_id", "active", "user_profile_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    recipient_id: Mapped[int] = mapped_column(ForeignKey("recipient.id", ondelete="CASCADE"))
    active: Mapped[bool] = mapped_column(default=True)

    color: Mapped[str] = mapped_column(String(10), default="#c2c2c2")
    is_muted: Mapped[bool] = mapped_column(default=False)
    pin_to_top: Mapped[bool] = mapped_column(default=False)
    # None inherits the user's own default for channel notifications.
    desktop_notifications: Mapped[bool | None] = mapped_column(default=None)
    audible_notifications: Mapped[bool | None] = mapped_column(default=None)
    push_notifications: Mapped[bool | None] = mapped_column(default=None)
    email_notifications: Mapped[bool | None] = mapped_column(default=None)
    wildcard_mentions_notify: Mapped[bool | None] = mapped_column(default=None)


class DefaultStream(Base):
    """A channel new users of the realm are subscribed to."""

    __tablename__ = "default_stream"

    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("stream.id", ondelete="CASCADE"), primary_key=True)
