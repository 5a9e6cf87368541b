"""Creating a channel: who may, its rows, its events, and the Notification Bot's announcement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from palaver.actions.channel_notify import notify_default_streams, notify_stream_created
from palaver.actions.channel_rules import (
    INSUFFICIENT_PERMISSION,
    check_privacy_permissions,
    check_topic_creation_rule,
    has_realm_permission,
)
from palaver.actions.group_settings import default_group_setting, store_group_setting_value
from palaver.actions.messages import SendContext
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.db.transaction import Tx, transaction
from palaver.lib.channel_folders import get_channel_folder
from palaver.lib.channels import (
    STREAM_GROUP_RULES,
    channel_link_syntax,
    channel_name_in_use,
    check_stream_description,
    check_stream_name,
    check_topics_policy,
    get_announcement_channel,
    metadata_access_user_ids,
)
from palaver.lib.exceptions import (
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
)
from palaver.lib.group_settings import GroupSettingValue, parse_group_setting_value
from palaver.lib.markdown.render import render_markdown
from palaver.lib.notification_bot import silent_mention
from palaver.lib.realm import get_realm
from palaver.models import Realm
from palaver.models.channels import STREAM_GROUP_SETTINGS, DefaultStream, Recipient, RecipientType, Stream
from palaver.models.requester import Requester

NEW_CHANNELS_TOPIC = "new channels"


@dataclass
class NewChannel:
    """A channel as its creator asks for it; unset group settings take their defaults."""

    name: str
    description: str = ""
    invite_only: bool = False
    is_web_public: bool = False
    history_public_to_subscribers: bool | None = None
    message_retention_days: int | None = None
    topics_policy: str = "inherit"
    folder_id: int | None = None
    group_settings: dict[str, GroupSettingValue] = field(default_factory=dict)
    is_default_stream: bool = False


def check_can_create_channel(session: Session, user: Requester, new: NewChannel) -> None:
    """Permission to create a channel configured like ``new``."""
    check_privacy_permissions(session, user, invite_only=new.invite_only, is_web_public=new.is_web_public)
    if new.message_retention_days is not None and not user.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    if new.is_default_stream and not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if new.topics_policy != "inherit" and not has_realm_permission(
        session, user, "can_set_topics_policy_group"
    ):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def _insert_stream(session: Session, realm_id: int, creator_id: int | None, new: NewChannel) -> Stream:
    """Insert a validated channel with its recipient; ``creator_id`` None for the system's own."""
    name = check_stream_name(new.name)
    if channel_name_in_use(session, realm_id, name):
        raise JsonableError(f"Channel '{name}' already exists", code="CHANNEL_ALREADY_EXISTS")
    if new.is_web_public and new.invite_only:
        raise JsonableError("Invalid parameters")
    if new.is_default_stream and new.invite_only:
        raise JsonableError("A default channel cannot be private.")
    if new.folder_id is not None:
        get_channel_folder(session, realm_id, new.folder_id)
    description = check_stream_description(new.description)
    history = new.history_public_to_subscribers
    # Public channels always share their history; private ones protect it unless asked.
    history = True if not new.invite_only else bool(history)
    groups: dict[str, int] = {}
    for setting in STREAM_GROUP_SETTINGS:
        rule = STREAM_GROUP_RULES[setting]
        value = new.group_settings.get(setting)
        if value is None:
            groups[setting] = default_group_setting(session, realm_id, rule, creator_id)
        else:
            resolved = parse_group_setting_value(session, realm_id, setting, value, rule)
            groups[setting] = store_group_setting_value(session, realm_id, resolved)
    stream = Stream(
        realm_id=realm_id,
        name=name,
        description=description,
        rendered_description=render_markdown(description),
        creator_id=creator_id,
        invite_only=new.invite_only,
        is_web_public=new.is_web_public,
        history_public_to_subscribers=history,
        message_retention_days=new.message_retention_days,
        topics_policy=check_topics_policy(new.topics_policy),
        folder_id=new.folder_id,
        **groups,
    )
    check_topic_creation_rule(session, stream)
    session.add(stream)
    session.flush()
    recipient = Recipient(type=RecipientType.STREAM, type_id=stream.id)
    session.add(recipient)
    session.flush()
    stream.recipient_id = recipient.id
    if new.is_default_stream:
        session.add(DefaultStream(realm_id=realm_id, stream_id=stream.id))
    session.flush()
    return stream


def create_channel(tx: Tx, session: Session, creator: Requester, new: NewChannel) -> Stream:
    """Create a channel the creator may create, inside the caller's transaction, and tell
    whoever may see it (the creator administers it, so sees even a private one)."""
    check_can_create_channel(session, creator, new)
    stream = _insert_stream(session, creator.realm_id, creator.user_id, new)
    notify_stream_created(tx, session, stream, metadata_access_user_ids(session, stream))
    if new.is_default_stream:
        notify_default_streams(tx, session, stream.realm_id)
    return stream


def create_initial_channels(session: Session, realm: Realm, channels: Sequence[NewChannel]) -> list[Stream]:
    """The channels a new organization starts with, before it has any user.

    Like Zulip's, they have no creator, so only the organization's administrators
    administer them; with nobody to tell yet, no events are sent.
    """
    with transaction(session):
        return [_insert_stream(session, realm.id, None, new) for new in channels]


def announce_new_channels(
    session: Session, creator: Requester, streams: Sequence[Stream], context: SendContext
) -> None:
    """Have the Notification Bot tell the realm's new-channel announcements channel (when it
    has one) about channels just created, inside the caller's transaction."""
    if not streams:
        return
    # The realm's row: the Notification Bot is made in it if it has none yet.
    realm = get_realm(session, creator.realm_id)
    target = get_announcement_channel(session, realm, "new_stream_announcements_stream_id")
    if target is None:
        return
    links = ", ".join(channel_link_syntax(s) for s in streams)
    if len(streams) == 1:
        content = f"{silent_mention(creator)} created a new channel {links}."
    else:
        content = f"{silent_mention(creator)} created the following channels: {links}."
    bot = get_or_create_notification_bot(session, realm, context.email_host)
    internal_send_stream_message(
        session, bot, target, NEW_CHANNELS_TOPIC, content, context, read_by_user_id=creator.user_id
    )
