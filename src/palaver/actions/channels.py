"""Channel writes: settings, archiving and the realm's default channels.

Each function runs in one transaction. Who hears of a change is whoever may see the channel
(``metadata_access_user_ids``): when a change alters that set, the users who gain sight of the
channel get a ``stream`` create event and those who lose it a ``stream`` delete event, while
everyone else gets the update.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import delete
from sqlalchemy.orm import Session

from palaver.actions.channel_notify import (
    notify_default_streams,
    notify_stream_created,
    notify_stream_deleted,
)
from palaver.actions.channel_rules import (
    INSUFFICIENT_PERMISSION,
    check_privacy_permissions,
    check_topic_creation_rule,
    has_realm_permission,
)
from palaver.actions.group_settings import set_group_setting
from palaver.db.transaction import Tx, transaction
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
    channel_name_in_use,
    check_stream_description,
    check_stream_name,
    check_topics_policy,
    default_stream_ids,
    has_content_access,
    metadata_access_user_ids,
    stream_post_policy,
    subscriber_ids,
    viewer_for,
)
from palaver.lib.exceptions import (
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
)
from palaver.lib.group_settings import (
    GroupSettingUpdate,
    check_expected_value,
    parse_group_setting_value,
    render_group_setting,
)
from palaver.lib.markdown.render import render_markdown
from palaver.lib.message_reports import check_moderation_channel_stays_private
from palaver.lib.realm import active_user_ids
from palaver.models import Realm
from palaver.models.channels import DefaultStream, Stream
from palaver.models.realm import REALM_ANNOUNCEMENT_CHANNEL_SETTINGS
from palaver.models.requester import Requester
from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME


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
    if changes.topics_policy is not None and not has_realm_permission(
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
    if not invite_only and stream.invite_only:
        check_moderation_channel_stays_private(session, stream)
    if (invite_only, web_public) != (stream.invite_only, stream.is_web_public):
        check_privacy_permissions(session, viewer.user, invite_only=invite_only, is_web_public=web_public)
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
    if channel_name_in_use(session, stream.realm_id, new_name, exclude_id=stream.id):
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
    notify_default_streams(tx, session, stream.realm_id)


def do_update_stream(
    session: Session, stream: Stream, acting_user: Requester, changes: ChannelChanges
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
        check_topic_creation_rule(session, stream)
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


def do_archive_stream(session: Session, stream: Stream, acting_user: Requester) -> None:
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
            notify_default_streams(tx, session, stream.realm_id)
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
