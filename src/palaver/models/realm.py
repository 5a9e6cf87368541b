"""The organization (realm) and its settings."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.models.user_settings import UserSettingsMixin
from palaver.timeutil import utcnow

# Names of the realm's group-setting columns; each holds a user_group ID. They carry no
# foreign key because the realm's system groups are created after the realm row itself.
REALM_GROUP_SETTINGS = (
    "can_access_all_users_group",
    "can_add_custom_emoji_group",
    "can_add_subscribers_group",
    "can_create_bots_group",
    "can_create_groups",
    "can_create_private_channel_group",
    "can_create_public_channel_group",
    "can_create_web_public_channel_group",
    "can_create_write_only_bots_group",
    "can_delete_any_message_group",
    "can_delete_own_message_group",
    "can_invite_users_group",
    "can_manage_all_groups",
    "can_mention_many_users_group",
    "can_move_messages_between_channels_group",
    "can_move_messages_between_topics_group",
    "can_resolve_topics_group",
    "can_set_delete_message_policy_group",
    "can_set_topics_policy_group",
    "can_summarize_topics_group",
    "create_multiuse_invite_group",
    "direct_message_initiator_group",
    "direct_message_permission_group",
)

# Names of the realm's columns naming the channel a kind of automated notice goes to.
REALM_ANNOUNCEMENT_CHANNEL_SETTINGS = (
    "new_stream_announcements_stream_id",
    "signup_announcements_stream_id",
    "zulip_update_announcements_stream_id",
    # Where message reports go (must be a private channel); None turns reporting off.
    "moderation_request_channel_id",
)


class Realm(Base):
    __tablename__ = "realm"

    id: Mapped[int] = mapped_column(primary_key=True)
    string_id: Mapped[str] = mapped_column(String(40), unique=True)
    name: Mapped[str] = mapped_column(String(40))
    description: Mapped[str] = mapped_column(Text, default="")
    date_created: Mapped[datetime] = mapped_column(default=utcnow)
    deactivated: Mapped[bool] = mapped_column(default=False)
    org_type: Mapped[int] = mapped_column(default=0)

    invite_required: Mapped[bool] = mapped_column(default=True)
    # Sign-in methods (Zulip's names: "Email", "LDAP", "OpenID Connect"...) administrators
    # turned off, comma-separated; a method the server offers is on unless listed here.
    disabled_authentication_methods: Mapped[str] = mapped_column(Text, default="")
    # Whether a first sign-in through a provider makes the account (within invite_required and
    # the allowed domains) or only an existing account may sign in that way.
    external_signup: Mapped[bool] = mapped_column(default=True)
    # Whether everyone who signs in with a password must have a second factor (TOTP).
    require_two_factor: Mapped[bool] = mapped_column(default=False)
    emails_restricted_to_domains: Mapped[bool] = mapped_column(default=False)
    waiting_period_threshold: Mapped[int] = mapped_column(default=0)
    default_language: Mapped[str] = mapped_column(default="en")
    enable_spectator_access: Mapped[bool] = mapped_column(default=False)
    # Whether members may see who read a message (GET /messages/{id}/read_receipts).
    enable_read_receipts: Mapped[bool] = mapped_column(default=True)
    message_retention_days: Mapped[int | None] = mapped_column(default=None)

    allow_message_editing: Mapped[bool] = mapped_column(default=True)
    allow_edit_history: Mapped[bool] = mapped_column(default=True)
    message_content_edit_limit_seconds: Mapped[int | None] = mapped_column(default=600)
    move_messages_within_stream_limit_seconds: Mapped[int | None] = mapped_column(default=604800)
    move_messages_between_streams_limit_seconds: Mapped[int | None] = mapped_column(default=604800)
    message_content_delete_limit_seconds: Mapped[int | None] = mapped_column(default=None)
    topics_policy: Mapped[str] = mapped_column(default="allow_empty_topic")
    mandatory_topics: Mapped[bool] = mapped_column(default=False)

    # Channels the Notification Bot posts notices to; None turns those notices off. Like the
    # group settings they carry no foreign key (a realm row and its channels would reference
    # each other); archiving a channel clears any of them naming it.
    new_stream_announcements_stream_id: Mapped[int | None] = mapped_column(default=None)
    signup_announcements_stream_id: Mapped[int | None] = mapped_column(default=None)
    zulip_update_announcements_stream_id: Mapped[int | None] = mapped_column(default=None)
    moderation_request_channel_id: Mapped[int | None] = mapped_column(default=None)

    icon_source: Mapped[str] = mapped_column(String(1), default="G")
    icon_version: Mapped[int] = mapped_column(default=1)
    # "D" default, "U" uploaded (lib/realm_images.py).
    logo_source: Mapped[str] = mapped_column(String(1), default="D")
    logo_version: Mapped[int] = mapped_column(default=1)
    night_logo_source: Mapped[str] = mapped_column(String(1), default="D")
    night_logo_version: Mapped[int] = mapped_column(default=1)
    # Previews in rendered messages (lib/previews.py).
    inline_image_preview: Mapped[bool] = mapped_column(default=True)
    inline_url_embed_preview: Mapped[bool] = mapped_column(default=False)

    can_access_all_users_group: Mapped[int | None] = mapped_column(default=None)
    can_add_custom_emoji_group: Mapped[int | None] = mapped_column(default=None)
    can_add_subscribers_group: Mapped[int | None] = mapped_column(default=None)
    can_create_bots_group: Mapped[int | None] = mapped_column(default=None)
    can_create_groups: Mapped[int | None] = mapped_column(default=None)
    can_create_private_channel_group: Mapped[int | None] = mapped_column(default=None)
    can_create_public_channel_group: Mapped[int | None] = mapped_column(default=None)
    can_create_web_public_channel_group: Mapped[int | None] = mapped_column(default=None)
    can_create_write_only_bots_group: Mapped[int | None] = mapped_column(default=None)
    can_delete_any_message_group: Mapped[int | None] = mapped_column(default=None)
    can_delete_own_message_group: Mapped[int | None] = mapped_column(default=None)
    can_invite_users_group: Mapped[int | None] = mapped_column(default=None)
    can_manage_all_groups: Mapped[int | None] = mapped_column(default=None)
    can_mention_many_users_group: Mapped[int | None] = mapped_column(default=None)
    can_move_messages_between_channels_group: Mapped[int | None] = mapped_column(default=None)
    can_move_messages_between_topics_group: Mapped[int | None] = mapped_column(default=None)
    can_resolve_topics_group: Mapped[int | None] = mapped_column(default=None)
    can_set_delete_message_policy_group: Mapped[int | None] = mapped_column(default=None)
    can_set_topics_policy_group: Mapped[int | None] = mapped_column(default=None)
    can_summarize_topics_group: Mapped[int | None] = mapped_column(default=None)
    create_multiuse_invite_group: Mapped[int | None] = mapped_column(default=None)
    direct_message_initiator_group: Mapped[int | None] = mapped_column(default=None)
    direct_message_permission_group: Mapped[int | None] = mapped_column(default=None)


class RealmUserDefault(UserSettingsMixin, Base):
    """Initial personal settings for users who join the realm later."""

    __tablename__ = "realm_user_default"

    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True)
