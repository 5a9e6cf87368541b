"""Channel writes: creation, settings, archiving and the realm's default channels.

Each function runs in one transaction. Who hears of a change is whoever may see the channel
(``metadata_access_user_ids``): when a change alters that set, the users who gain sight of the
channel get a ``stream`` create event and those who lose it a ``stream`` delete event, while
everyone else gets the update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.actions.group_settings import default_group_setting, set_group_setting, store_group_setting_value
from palaver.actions.messages import SendContext
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.db import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channel_folders import get_channel_folder
from palaver.lib.channels import (
    SETTINGS_REQUIRING_CONTENT_ACCESS,
    STREAM_GROUP_RULES,
    UNCHANGED,
    Unchanged,
    Viewer,
    can_administer_stream,
    channel_has_named_topics,
    channel_link_syntax,
    check_stream_description,
    check_stream_name,
    check_topics_policy,
    default_stream_ids,
    format_stream,
    get_announcement_channel,
    get_stream_by_name,
    has_content_access,
    metadata_access_user_ids,
    stream_post_policy,
    subscriber_ids,
    viewer_for,
)
from palaver.lib.exceptions import (
    IncompatibleParametersError,
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
)
from palaver.lib.group_settings import (
    GroupSettingUpdate,
    GroupSettingValue,
    check_expected_value,
    parse_group_setting_value,
    render_group_setting,
    user_has_permission,
)
from palaver.lib.markdown.render import render_markdown
from palaver.lib.notification_bot import silent_mention
from palaver.lib.realm import active_user_ids
from palaver.models import Realm, Role, UserGroup, UserProfile
from palaver.models.channels import (
    STREAM_GROUP_SETTINGS,
    DefaultStream,
    Recipient,
    RecipientType,
    Stream,
)
from palaver.models.realm import REALM_ANNOUNCEMENT_CHANNEL_SETTINGS
from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME

INSUFFICIENT_PERMISSION = "Insufficient permission"
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


@dataclass
class ChannelChanges:
    """An edit of a channel's settings; ``None`` (or ``UNCHANGED`` where None is a value) keeps one."""

    new_name: str | None = None
    description: str | None = None
    is_private: bool | None = None
    is_web_public: bool | None = None
    history_public_to_subscribers: bool | None = None
    is_default_stream: bool | None = None
    message_retention_days: int | Unchanged | None = UNCHANGED
    folder_id: int | Unchanged | None = UNCHANGED
    topics_policy: str | None = None
    group_settings: dict[str, GroupSettingUpdate] = field(default_factory=dict)


def _realm_permission(session: Session, user: UserProfile, setting: str) -> bool:
    return user_has_permission(session, user, getattr(user.realm, setting))


def _check_privacy_permissions(
    session: Session, user: UserProfile, *, invite_only: bool, is_web_public: bool
) -> None:
    if is_web_public:
        if not user.realm.enable_spectator_access:
            raise JsonableError("Web-public channels are not enabled.")
        if not _realm_permission(session, user, "can_create_web_public_channel_group"):
            raise JsonableError(INSUFFICIENT_PERMISSION)
    setting = "can_create_private_channel_group" if invite_only else "can_create_public_channel_group"
    if not _realm_permission(session, user, setting):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def check_can_create_channel(session: Session, user: UserProfile, new: NewChannel) -> None:
    """Permission to create a channel configured like ``new``."""
    _check_privacy_permissions(session, user, invite_only=new.invite_only, is_web_public=new.is_web_public)
    if new.message_retention_days is not None and not user.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    if new.is_default_stream and not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if new.topics_policy != "inherit" and not _realm_permission(session, user, "can_set_topics_policy_group"):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def _system_group_name(session: Session, group_id: int) -> str | None:
    group = session.get(UserGroup, group_id)
    return group.name if group is not None and group.is_system_group else None


def _check_topic_creation_rule(session: Session, stream: Stream) -> None:
    # Without shared history, a subscriber could not read a topic someone else may not start.
    if (
        stream.invite_only
        and not stream.history_public_to_subscribers
        and _system_group_name(session, stream.can_create_topic_group) != "role:everyone"
    ):
        raise IncompatibleParametersError(["can_create_topic_group", "history_public_to_subscribers"])


def _insert_stream(session: Session, realm_id: int, creator: UserProfile | None, new: NewChannel) -> Stream:
    """Insert a validated channel with its recipient; ``creator`` None for the system's own."""
    creator_id = creator.id if creator is not None else None
    name = check_stream_name(new.name)
    if get_stream_by_name(session, realm_id, name) is not None:
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
    _check_topic_creation_rule(session, stream)
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


def notify_stream_created(
    tx: Tx, session: Session, stream: Stream, user_ids: Sequence[int] | set[int]
) -> None:
    payload = ev.StreamPayload(**format_stream(session, stream))
    tx.send_event(stream.realm_id, ev.StreamCreate(streams=[payload]), user_ids)


def notify_stream_deleted(tx: Tx, stream: Stream, user_ids: Sequence[int] | set[int]) -> None:
    event = ev.StreamDelete(streams=[ev.StreamRef(stream_id=stream.id)], stream_ids=[stream.id])
    tx.send_event(stream.realm_id, event, user_ids)


def _notify_default_streams(tx: Tx, session: Session, realm_id: int) -> None:
    recipients = session.scalars(
        select(UserProfile.id).where(
            UserProfile.realm_id == realm_id, UserProfile.is_active, UserProfile.role != Role.GUEST
        )
    )
    event = ev.DefaultStreams(default_streams=default_stream_ids(session, realm_id))
    tx.send_event(realm_id, event, list(recipients))


def create_channel(tx: Tx, session: Session, creator: UserProfile, new: NewChannel) -> Stream:
    """Create a channel the creator may create, inside the caller's transaction, and tell
    whoever may see it (the creator administers it, so sees even a private one)."""
    check_can_create_channel(session, creator, new)
    stream = _insert_stream(session, creator.realm_id, creator, new)
    notify_stream_created(tx, session, stream, metadata_access_user_ids(session, stream))
    if new.is_default_stream:
        _notify_default_streams(tx, session, stream.realm_id)
    return stream


def create_initial_channels(session: Session, realm: Realm, channels: Sequence[NewChannel]) -> list[Stream]:
    """The channels a new organization starts with, before it has any user.

    Like Zulip's, they have no creator, so only the organization's administrators
    administer them; with nobody to tell yet, no events are sent.
    """
    with transaction(session):
        return [_insert_stream(session, realm.id, None, new) for new in channels]


def announce_new_channels(
    session: Session, creator: UserProfile, streams: Sequence[Stream], context: SendContext
) -> None:
    """Have the Notification Bot tell the realm's new-channel announcements channel (when it
    has one) about channels just created, inside the caller's transaction."""
    realm = creator.realm
    target = get_announcement_channel(session, realm, "new_stream_announcements_stream_id")
    if not streams or target is None:
        return
    links = ", ".join(channel_link_syntax(s) for s in streams)
    if len(streams) == 1:
        content = f"{silent_mention(creator)} created a new channel {links}."
    else:
        content = f"{silent_mention(creator)} created the following channels: {links}."
    bot = get_or_create_notification_bot(session, realm, context.email_host)
    internal_send_stream_message(
        session, bot, target, NEW_CHANNELS_TOPIC, content, context, read_by_user_id=creator.id
    )


def _require_administer(viewer: Viewer, stream: Stream) -> None:
    if not can_administer_stream(viewer, stream):
        raise JsonableError("You do not have permission to administer this channel.")


def _check_update_permissions(
    session: Session, viewer: Viewer, stream: Stream, changes: ChannelChanges
) -> None:
    user = viewer.user
    if changes.is_default_stream is not None and not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    touches_channel = (
        changes.new_name is not None
        or changes.description is not None
        or changes.is_private is not None
        or changes.is_web_public is not None
        or changes.history_public_to_subscribers is not None
        or changes.message_retention_days is not UNCHANGED
        or changes.folder_id is not UNCHANGED
        or changes.topics_policy is not None
        or bool(changes.group_settings)
    )
    if touches_channel:
        _require_administer(viewer, stream)
    privacy = (changes.is_private, changes.is_web_public, changes.history_public_to_subscribers)
    needs_content = any(v is not None for v in privacy) or not SETTINGS_REQUIRING_CONTENT_ACCESS.isdisjoint(
        changes.group_settings
    )
    if needs_content and not has_content_access(viewer, stream):
        raise JsonableError("Channel content access is required.")
    if changes.message_retention_days is not UNCHANGED and not user.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    if changes.topics_policy is not None and not _realm_permission(
        session, user, "can_set_topics_policy_group"
    ):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def _update_event(
    stream: Stream, prop: str, value: ev.GroupSettingPayload | bool | int | str | None
) -> ev.StreamUpdate:
    return ev.StreamUpdate(stream_id=stream.id, name=stream.name, property=prop, value=value)


def _apply_privacy(
    session: Session, viewer: Viewer, stream: Stream, changes: ChannelChanges
) -> list[ev.StreamUpdate]:
    invite_only = stream.invite_only if changes.is_private is None else changes.is_private
    web_public = changes.is_web_public
    if web_public is None:
        web_public = stream.is_web_public and not invite_only
    history = changes.history_public_to_subscribers
    if history is None:
        history = stream.history_public_to_subscribers or not invite_only
    if (web_public and invite_only) or (not invite_only and not history):
        raise JsonableError("Invalid parameters")
    if (invite_only, web_public) != (stream.invite_only, stream.is_web_public):
        _check_privacy_permissions(session, viewer.user, invite_only=invite_only, is_web_public=web_public)
    events = []
    if invite_only != stream.invite_only:
        events.append(
            ev.StreamUpdate(
                stream_id=stream.id,
                name=stream.name,
                property="invite_only",
                value=invite_only,
                history_public_to_subscribers=history,
                is_web_public=web_public,
            )
        )
    if web_public != stream.is_web_public:
        events.append(_update_event(stream, "is_web_public", web_public))
    if history != stream.history_public_to_subscribers:
        events.append(_update_event(stream, "history_public_to_subscribers", history))
    stream.invite_only, stream.is_web_public, stream.history_public_to_subscribers = (
        invite_only,
        web_public,
        history,
    )
    return events


def _rename(session: Session, stream: Stream, new_name: str) -> ev.StreamUpdate:
    new_name = check_stream_name(new_name)
    if new_name == stream.name:
        raise JsonableError("Channel already has that name.")
    existing = get_stream_by_name(session, stream.realm_id, new_name)
    if existing is not None and existing.id != stream.id:
        raise JsonableError("Channel name already in use.")
    event = _update_event(stream, "name", new_name)
    stream.name = new_name
    return event


def _set_default(tx: Tx, session: Session, stream: Stream, is_default: bool) -> None:
    current = stream.id in default_stream_ids(session, stream.realm_id)
    if current == is_default:
        return
    if is_default:
        if stream.invite_only:
            raise JsonableError("Private channels cannot be made default.")
        session.add(DefaultStream(realm_id=stream.realm_id, stream_id=stream.id))
    else:
        session.execute(delete(DefaultStream).where(DefaultStream.stream_id == stream.id))
    session.flush()
    _notify_default_streams(tx, session, stream.realm_id)


def do_update_stream(
    session: Session, stream: Stream, acting_user: UserProfile, changes: ChannelChanges
) -> None:
    """PATCH /streams/{id}: every change applies, or none does."""
    with transaction(session) as tx:
        tx.lock(stream)
        viewer = viewer_for(session, acting_user)
        _check_update_permissions(session, viewer, stream, changes)
        before = metadata_access_user_ids(session, stream)
        updates: list[ev.StreamUpdate] = []
        if changes.new_name is not None:
            updates.append(_rename(session, stream, changes.new_name))
        if changes.description is not None:
            description = check_stream_description(changes.description)
            if description != stream.description:
                stream.description, stream.rendered_description = description, render_markdown(description)
                updates.append(
                    ev.StreamUpdate(
                        stream_id=stream.id,
                        name=stream.name,
                        property="description",
                        value=description,
                        rendered_description=stream.rendered_description,
                    )
                )
        if any(
            v is not None
            for v in (changes.is_private, changes.is_web_public, changes.history_public_to_subscribers)
        ):
            updates += _apply_privacy(session, viewer, stream, changes)
        if (
            changes.message_retention_days is not UNCHANGED
            and changes.message_retention_days != stream.message_retention_days
        ):
            stream.message_retention_days = changes.message_retention_days
            updates.append(_update_event(stream, "message_retention_days", stream.message_retention_days))
        if changes.folder_id is not UNCHANGED and changes.folder_id != stream.folder_id:
            if changes.folder_id is not None:
                get_channel_folder(session, stream.realm_id, changes.folder_id)
            stream.folder_id = changes.folder_id
            updates.append(_update_event(stream, "folder_id", stream.folder_id))
        if changes.topics_policy is not None and changes.topics_policy != stream.topics_policy:
            policy = check_topics_policy(changes.topics_policy)
            if policy == "empty_topic_only" and channel_has_named_topics(session, stream):
                # Its named topics could no longer be replied to.
                raise JsonableError(
                    "To enable this configuration, all messages in this channel must be in the "
                    f'"{EMPTY_TOPIC_DISPLAY_NAME}" topic.'
                )
            stream.topics_policy = policy
            updates.append(_update_event(stream, "topics_policy", stream.topics_policy))
        for setting, update in changes.group_settings.items():
            group_id: int = getattr(stream, setting)
            check_expected_value(session, group_id, update.old)
            rule = STREAM_GROUP_RULES[setting]
            resolved = parse_group_setting_value(session, stream.realm_id, setting, update.new, rule)
            old_policy = stream_post_policy(session, stream.can_send_message_group)
            if set_group_setting(session, stream, setting, resolved, stream.realm_id):
                value = render_group_setting(session, getattr(stream, setting))
                payload = value if isinstance(value, int) else ev.GroupSettingObject(**value)
                updates.append(_update_event(stream, setting, payload))
                new_policy = stream_post_policy(session, stream.can_send_message_group)
                if new_policy != old_policy:
                    # Legacy clients still read who may post from this property.
                    updates.append(_update_event(stream, "stream_post_policy", new_policy))
        is_default = stream.id in default_stream_ids(session, stream.realm_id)
        if stream.invite_only and is_default and changes.is_default_stream is not False:
            raise JsonableError("A default channel cannot be private.")
        _check_topic_creation_rule(session, stream)
        session.flush()
        if changes.is_default_stream is not None:
            _set_default(tx, session, stream, changes.is_default_stream)
        after = metadata_access_user_ids(session, stream)
        for event in updates:
            tx.send_event(stream.realm_id, event, before & after)
        _notify_access_changes(tx, session, stream, before, after)


def _notify_access_changes(
    tx: Tx, session: Session, stream: Stream, before: set[int], after: set[int]
) -> None:
    gained, lost = after - before, before - after
    if gained:
        notify_stream_created(tx, session, stream, gained)
        subscribers = sorted(subscriber_ids(session, stream))
        if subscribers:
            tx.send_event(
                stream.realm_id, ev.SubscriptionPeerAdd(stream_ids=[stream.id], user_ids=subscribers), gained
            )
    if lost:
        notify_stream_deleted(tx, stream, lost)


def do_archive_stream(session: Session, stream: Stream, acting_user: UserProfile) -> None:
    """Archive a channel: it leaves lists and the default channels, its subscriptions stay."""
    with transaction(session) as tx:
        tx.lock(stream)
        _require_administer(viewer_for(session, acting_user), stream)
        if stream.deactivated:
            raise JsonableError("Channel is already deactivated")
        recipients = metadata_access_user_ids(session, stream)
        stream.deactivated = True
        was_default = stream.id in default_stream_ids(session, stream.realm_id)
        session.execute(delete(DefaultStream).where(DefaultStream.stream_id == stream.id))
        session.flush()
        # Clients that keep archived channels mark it archived; the others drop it
        # (events/queues.event_for_client gives each client one of the two).
        archived = _update_event(stream, "is_archived", True)
        tx.send_event(stream.realm_id, archived, recipients)
        deleted = ev.StreamDelete(
            streams=[ev.StreamRef(stream_id=stream.id)], stream_ids=[stream.id], archived=True
        )
        tx.send_event(stream.realm_id, deleted, recipients)
        if was_default:
            _notify_default_streams(tx, session, stream.realm_id)
        _clear_announcement_settings(tx, session, stream)


def _clear_announcement_settings(tx: Tx, session: Session, stream: Stream) -> None:
    """An archived channel takes no notices: settings naming it turn off."""
    realm = session.get(Realm, stream.realm_id)
    assert realm is not None
    for setting in REALM_ANNOUNCEMENT_CHANNEL_SETTINGS:
        if getattr(realm, setting) == stream.id:
            setattr(realm, setting, None)
            event = ev.RealmUpdate(property=setting, value=-1)
            tx.send_event(realm.id, event, active_user_ids(session, realm.id))


def do_add_default_stream(session: Session, stream: Stream) -> None:
    with transaction(session) as tx:
        if stream.deactivated:
            raise JsonableError("Invalid channel ID")
        _set_default(tx, session, stream, True)


def do_remove_default_stream(session: Session, stream: Stream) -> None:
    with transaction(session) as tx:
        _set_default(tx, session, stream, False)
