"""Creating an organization from an ``ImportSource``, in one transaction.

The realm, its owner and its channels go through the actions (their groups, settings and
permissions must be exactly what a new organization gets); users, subscriptions,
messages, their per-user rows and reactions are inserted in batches with no events (an
import has no clients listening, and ``do_create_user`` per user is quadratic). Files are
stored as they come; if anything fails, the transaction rolls back and the stored files
are deleted, so a failed import leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
import unicodedata
from collections.abc import Callable, Container
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TextIO, TypeVar

import orjson
from sqlalchemy import Table, func, insert, select, update
from sqlalchemy.orm import Session

from palaver.actions.avatars import do_upload_avatar
from palaver.actions.channel_creation import do_create_channel
from palaver.actions.group_settings import set_group_setting
from palaver.actions.linkifiers import do_add_linkifier
from palaver.actions.message_recipients import create_dm_group
from palaver.actions.navigation_views import do_add_navigation_view
from palaver.actions.new_channels import NewChannel
from palaver.actions.playgrounds import do_add_playground
from palaver.actions.profile_fields import do_create_profile_field
from palaver.actions.realm import check_string_id, do_create_realm
from palaver.actions.realm_domains import do_add_realm_domain
from palaver.actions.realm_emoji import do_add_realm_emoji
from palaver.actions.realm_settings import do_update_realm_settings
from palaver.actions.saved_snippets import do_create_saved_snippet
from palaver.actions.user_groups import (
    NewUserGroup,
    UserGroupChanges,
    do_create_user_group,
    do_update_user_group,
)
from palaver.actions.user_status import do_update_user_status
from palaver.actions.users import ProfileDataChange, do_update_user_custom_profile_data
from palaver.db.transaction import transaction
from palaver.importers.model import (
    REALM_SETTINGS,
    ImportedChannel,
    ImportedFile,
    ImportedGroup,
    ImportedGroupSetting,
    ImportedMessage,
    ImportedScheduledMessage,
    ImportedUser,
    ImportInputError,
    ImportSource,
    Report,
    Summary,
    clean_full_name,
)
from palaver.importers.narrow_links import NewIds, remap_fragment, remap_links
from palaver.importers.threads import ScratchMap
from palaver.lib.attachments import new_path_id, new_url_secret, upload_url
from palaver.lib.avatars import uploaded_avatar_key
from palaver.lib.channel_folders import (
    channel_folder_name_in_use,
    check_channel_folder_description,
    check_channel_folder_name,
)
from palaver.lib.channels import STREAM_GROUP_RULES
from palaver.lib.emoji import emoji_code_for_name
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    AnonymousGroupValue,
    GroupSettingUpdate,
    GroupSettingValue,
    parse_group_setting_value,
)
from palaver.lib.limits import MAX_MESSAGE_LENGTH, MAX_STREAM_NAME_LENGTH, MAX_TOPIC_LENGTH
from palaver.lib.linkifiers import linkifiers_for_realm
from palaver.lib.markdown.contract import MarkdownContext, RenderResult, StreamRef, UserRef
from palaver.lib.markdown.render import render_markdown, render_message
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import get_realm_by_string_id, realm_email_host, realm_url
from palaver.lib.realm_emoji import emoji_storage_key, still_file_name
from palaver.lib.scheduled_messages import direct_to, reminder_content
from palaver.lib.storage import FileStorage, make_storage
from palaver.lib.subscriptions import SUBSCRIPTION_PROPERTIES
from palaver.lib.user_groups import direct_system_groups_for, get_system_groups
from palaver.lib.user_settings import setting_specs
from palaver.lib.users import api_email_for, check_email
from palaver.models import Base, Realm, RealmUserDefault, Role, UserProfile
from palaver.models.alert_words import MAX_ALERT_WORD_LENGTH, AlertWord
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.channels import ChannelFolder, DefaultStream, Stream, Subscription
from palaver.models.groups import GROUP_PERMISSION_SETTINGS, UserGroupMembership
from palaver.models.messages import Message, MessageFlag, Reaction
from palaver.models.muted_users import MutedUser
from palaver.models.names import name_key
from palaver.models.realm import REALM_GROUP_SETTINGS
from palaver.models.realm_audit_log import AuditLogEventType, RealmAuditLog
from palaver.models.requester import Requester
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage
from palaver.models.user_topics import UserTopic, VisibilityPolicy
from palaver.models.users import BotType
from palaver.portability.archive import Progress
from palaver.services import Services
from palaver.timeutil import utcnow

T = TypeVar("T")
_READ, _STARRED, _MENTIONED = int(MessageFlag.READ), int(MessageFlag.STARRED), int(MessageFlag.MENTIONED)
_STREAM_WILDCARD = int(MessageFlag.STREAM_WILDCARD_MENTIONED)
_TOPIC_WILDCARD = int(MessageFlag.TOPIC_WILDCARD_MENTIONED)
_IS_PRIVATE = int(MessageFlag.IS_PRIVATE)
# A member's own channel settings an import carries over: those the API lets them set.
_SUBSCRIPTION_SETTINGS = frozenset(SUBSCRIPTION_PROPERTIES)
MAX_REALM_NAME_LENGTH = 40
_VISIBILITY_POLICIES = frozenset(int(p) for p in VisibilityPolicy if p != VisibilityPolicy.INHERIT)
MAX_DESCRIPTION_LENGTH = 1024


def write_organization(
    services: Services,
    source: ImportSource,
    *,
    string_id: str,
    name: str | None = None,
    storage: FileStorage | None = None,
    progress: TextIO | None = None,
    batch_size: int = 1_000,
) -> Summary:
    started = time.monotonic()
    try:
        check_string_id(string_id)
    except JsonableError as e:
        raise ImportInputError(f"--string-id {string_id!r}: {e.msg}") from None
    storage = storage if storage is not None else make_storage(services.settings)
    written = ScratchMap()  # the storage keys of the files saved so far
    with written, services.db.session() as session:
        if get_realm_by_string_id(session, string_id) is not None:
            raise ImportInputError(f"an organization with string ID {string_id!r} exists already")
        try:
            with transaction(session):
                writer = _Writer(services, session, source, storage, written, batch_size)
                try:
                    summary = writer.run(string_id, name or source.name, progress)
                finally:
                    writer.close()
        except BaseException:
            for key in written:  # the rows went with the rollback; so go their files
                storage.delete(key)
            raise
    summary.seconds = time.monotonic() - started
    return summary


def _shortened(content: str) -> str:
    """``content`` cut to a message's greatest length, marked as cut."""
    return content if len(content) <= MAX_MESSAGE_LENGTH else content[: MAX_MESSAGE_LENGTH - 3] + "..."


def _table(model: type[Base]) -> Table:
    """The model's table, for Core inserts: no ORM bookkeeping per row."""
    return Base.metadata.tables[model.__tablename__]


@dataclass
class _Prepared:
    message: ImportedMessage
    row: dict[str, Any]
    flags: dict[int, int]  # user ID -> flags
    attachment_ids: list[int]
    # The content before its links were renamed, when one names a message not written yet
    # (often one of the same batch): renamed again once the batch has its IDs.
    relink: str | None = None


class _Writer:
    def __init__(
        self,
        services: Services,
        session: Session,
        source: ImportSource,
        storage: FileStorage,
        written: ScratchMap,
        batch_size: int,
    ) -> None:
        self.services, self.session, self.source = services, session, source
        self.storage, self.written, self.batch_size = storage, written, batch_size
        self.report: Report = source.report
        self.summary = Summary()
        self.user_ids: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.channels: dict[str, tuple[int, list[int]]] = {}  # key -> (recipient, subscriber IDs)
        self.stream_ids: dict[str, int] = {}
        # The new ID of each message written that has a source ID (a reminder, a navigation
        # view or a later message's link may name it): on disk, as it grows with the history.
        self.message_ids = ScratchMap()
        self.new_ids = NewIds(
            channel=self.stream_ids.get, user=self.user_ids.get, message=self._new_message_id
        )
        # By the conversation's sorted user IDs: one per conversation, so on disk.
        self.dm_recipients = ScratchMap()
        self.first_message: dict[int, int] = {}
        self.aliases: dict[str, str] = {}  # a duplicate user's key -> the kept user's key
        self.channel_names: set[str] = set()  # their name_key: unique regardless of case
        self.custom_emoji: dict[str, int] = {}
        self.stored_files = ScratchMap()  # file key -> (attachment ID, URL)

    def close(self) -> None:
        self.dm_recipients.close()
        self.stored_files.close()
        self.message_ids.close()

    def _new_message_id(self, source_id: str) -> int | None:
        found = self.message_ids.get(source_id)
        return None if found is None else found[0]

    # The organization and its people -----------------------------------------------------

    def run(self, string_id: str, name: str, progress: TextIO | None) -> Summary:
        name = name.strip() or string_id
        if len(name) > MAX_REALM_NAME_LENGTH:
            self.report.warnings.append(f"organization name shortened to {MAX_REALM_NAME_LENGTH} characters")
            name = name[:MAX_REALM_NAME_LENGTH].strip()
        probe = Realm(string_id=string_id, name=name)
        self.email_host = realm_email_host(self.services.settings, probe)
        users = self._checked_users()
        owner_spec = _pick_owner(users)
        realm, owner = do_create_realm(
            self.session,
            string_id=string_id,
            name=name,
            owner_email=owner_spec.email,
            owner_full_name=owner_spec.full_name,
            owner_password_hash=None,
            email_host=self.email_host,
            description=self.source.description,
            default_channels=False,
        )
        self.realm, self.owner = realm, owner
        for setting, value in self.source.realm_settings.items():
            if setting in REALM_SETTINGS and isinstance(value, type(getattr(realm, setting))):
                setattr(realm, setting, value)
        self.realm_url = realm_url(self.services.settings, realm)
        owner.timezone = owner_spec.timezone
        owner.is_imported_stub = True
        if owner_spec.date_joined is not None:
            owner.date_joined = owner_spec.date_joined
        self.user_ids[owner_spec.key] = owner.id
        self.names[owner.id] = owner.full_name
        self._add_users([u for u in users if u is not owner_spec])
        self.active_keys = {u.key for u in users if u.is_active}
        self.active_keys |= {alias for alias, kept in self.aliases.items() if kept in self.active_keys}
        self._count_users(users)
        self.folder_ids = self._add_channel_folders()
        for spec in self.source.channels:
            self._add_channel(spec)
        self._add_avatars(users)
        self._add_user_settings(users)
        self._add_groups()
        self._add_channel_group_settings()
        self._add_profile_fields()
        self._add_linkifiers()
        self._add_personal_settings()
        self._add_emoji()
        self._add_messages(progress)
        self._add_scheduled_messages()
        self._add_organization_extras()
        self._add_navigation_views()
        for spec in self.source.channels:
            stream_id = self.stream_ids.get(spec.key)
            if stream_id is None:
                continue
            recipient_id = self.channels[spec.key][0]
            values: dict[str, Any] = {"first_message_id": self.first_message.get(recipient_id)}
            if spec.archived:
                values["deactivated"] = True
            self.session.execute(update(Stream).where(Stream.id == stream_id).values(**values))
        # Last: until now the owner acted under a new organization's permissions (one to create
        # groups and emoji...), whatever the imported ones grant.
        self._add_realm_group_settings()
        self.summary.topics = self._count_topics()
        self.summary.realm_id = realm.id
        self._record_import()
        return self.summary

    def _count_topics(self) -> int:
        """The channels' topics as the server tells them apart (``lower(subject)``, the index
        ``ix_message_recipient_id_lower_subject_id``), counted by the database at the end:
        a set of them in memory grew with the history."""
        recipients = [recipient_id for recipient_id, _members in self.channels.values()]
        if not recipients:
            return 0
        lowered = func.lower(Message.subject)
        topics = select(Message.recipient_id, lowered).where(Message.recipient_id.in_(recipients)).distinct()
        return int(self.session.scalar(select(func.count()).select_from(topics.subquery())) or 0)

    def _record_import(self) -> None:
        """The organization's audit log says where it came from and what came across, in the
        import's own transaction (an import that rolls back leaves no record)."""
        extra = {
            "source": self.source.source,
            "summary": {
                k: v for k, v in dataclasses.asdict(self.summary).items() if k not in ("realm_id", "seconds")
            },
            "skipped": dict(sorted(self.report.skipped.items())),
        }
        self.session.add(
            RealmAuditLog(
                realm_id=self.realm.id,
                acting_user_id=None,
                event_type=int(AuditLogEventType.REALM_IMPORTED),
                event_time=utcnow(),
                extra_data=orjson.dumps(extra).decode(),
            )
        )

    def _checked_users(self) -> list[ImportedUser]:
        seen: dict[str, ImportedUser] = {}
        kept: list[ImportedUser] = []
        for user in self.source.users:
            user.full_name = clean_full_name(user.full_name, user.key)
            email = user.email.strip().lower()
            if not email:
                email = f"{_local_part(user.key)}@{self.email_host}"
            try:
                email = check_email(email)
            except JsonableError:
                self.report.skip("user with an invalid email (their messages are skipped too)", user.key)
                continue
            user.email = email
            if email in seen:
                self.report.skip("user with a duplicate email (merged into the first)", user.key)
                self.aliases[user.key] = seen[email].key
                continue
            seen[email] = user
            kept.append(user)
        if not any(not u.is_bot and u.is_active for u in kept):
            raise ImportInputError("the export has no active human user to own the organization")
        return kept

    def _count_users(self, users: list[ImportedUser]) -> None:
        self.summary.users = len(users)
        self.summary.bots = sum(u.is_bot for u in users)
        self.summary.deactivated = sum(not u.is_active for u in users)
        for alias, target in self.aliases.items():
            self.user_ids[alias] = self.user_ids[target]

    def _add_users(self, users: list[ImportedUser]) -> None:
        session, realm = self.session, self.realm
        defaults = session.get(RealmUserDefault, realm.id)
        settings_values = (
            {name: getattr(defaults, name) for name in setting_specs()} if defaults is not None else {}
        )
        settings_values["default_language"] = realm.default_language
        groups = get_system_groups(session, realm.id)
        now = utcnow()
        full_after = now - timedelta(days=realm.waiting_period_threshold)
        created: list[tuple[UserProfile, ImportedUser]] = []
        for spec in users:
            user = UserProfile(
                realm_id=realm.id,
                email=spec.email,
                delivery_email=spec.email,
                full_name=spec.full_name,
                role=Role.MEMBER if spec.is_bot else spec.role,
                is_bot=spec.is_bot,
                bot_type=BotType.GENERIC if spec.is_bot else None,
                is_active=spec.is_active,
                timezone=spec.timezone,
                api_key=generate_api_key(),
                password=None,
                date_joined=spec.date_joined or now,
                # Until its owner signs in (actions/logins.py), as Zulip marks imported accounts.
                is_imported_stub=not spec.is_bot,
                **settings_values,
            )
            session.add(user)
            created.append((user, spec))
        session.flush()
        memberships = []
        for user, spec in created:
            user.email = api_email_for(self.email_host, user)
            self.user_ids[spec.key] = user.id
            self.names[user.id] = user.full_name
            wanted = direct_system_groups_for(user.role, user.date_joined <= full_after)
            memberships += [{"user_group_id": groups[g].id, "user_profile_id": user.id} for g in wanted]
        for user, spec in created:
            if spec.is_bot:
                owner_id = self.user_ids.get(spec.bot_owner or "", self.owner.id)
                user.bot_owner_id = owner_id
        if memberships:
            session.execute(insert(_table(UserGroupMembership)), memberships)
        session.flush()

    # Channels and emoji -------------------------------------------------------------------

    def _add_channel(self, spec: ImportedChannel) -> None:
        name = spec.name.strip().lstrip("#").strip() or spec.key
        name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cs", "Cn"))
        if len(name) > MAX_STREAM_NAME_LENGTH:
            self.report.skip("channel name too long (shortened)", spec.key)
            name = name[:MAX_STREAM_NAME_LENGTH].strip()
        taken = self.channel_names
        if name_key(name) in taken:
            self.report.skip("duplicate channel name (renamed)", f"{spec.key} {name!r}")
            base = name[: MAX_STREAM_NAME_LENGTH - 6]
            n = 2
            while name_key(f"{base} ({n})") in taken:
                n += 1
            name = f"{base} ({n})"
        taken.add(name_key(name))
        description = " ".join(spec.description.split())[:MAX_DESCRIPTION_LENGTH]
        new = NewChannel(
            name=name,
            description=description,
            invite_only=spec.invite_only,
            history_public_to_subscribers=spec.history_public_to_subscribers,
            is_web_public=spec.is_web_public,
        )
        administrators = sorted(
            {self.user_ids[k] for k in spec.administrators if k in self.user_ids and k in self.active_keys}
        )
        if administrators:
            new.group_settings["can_administer_channel_group"] = AnonymousGroupValue(
                direct_members=administrators
            )
        stream = None
        if spec.is_web_public:
            # The new organization's settings may not allow web-public channels.
            stream = self._attempt(
                "web-public channel (imported as public)",
                spec.key,
                functools.partial(do_create_channel, self.session, Requester.of(self.owner), new),
            )
            new.is_web_public = False
        if stream is None:
            stream = do_create_channel(self.session, Requester.of(self.owner), new)
        if spec.date_created is not None:
            stream.date_created = spec.date_created
        if spec.creator is not None and spec.creator in self.user_ids:
            stream.creator_id = self.user_ids[spec.creator]
        if spec.folder is not None:
            stream.folder_id = self.folder_ids.get(spec.folder)
            if stream.folder_id is None:
                self.report.skip("channel in a folder not in the export (left out of folders)", spec.key)
        assert stream.recipient_id is not None
        members = sorted({self.user_ids[m] for m in spec.members if m in self.user_ids})
        unknown = [m for m in spec.members if m not in self.user_ids]
        for key in unknown:
            self.report.skip("channel member not among the users", f"{spec.key}: {key}")
        settings = {self.user_ids[k]: v for k, v in spec.member_settings.items() if k in self.user_ids}
        if members:
            self.session.execute(
                insert(_table(Subscription)),
                [
                    {
                        "user_profile_id": u,
                        "recipient_id": stream.recipient_id,
                        **{k: v for k, v in settings.get(u, {}).items() if k in _SUBSCRIPTION_SETTINGS},
                    }
                    for u in members
                ],
            )
        self.channels[spec.key] = (stream.recipient_id, members)
        self.stream_ids[spec.key] = stream.id
        self.summary.channels += 1
        self.summary.private_channels += spec.invite_only
        self.summary.archived_channels += spec.archived

    def _add_emoji(self) -> None:
        for spec in self.source.emoji:
            data = spec.load()
            if data is None:
                self.report.skip("custom emoji whose image could not be read", spec.name)
                continue
            emoji = self._attempt(
                "custom emoji",
                spec.name,
                functools.partial(
                    do_add_realm_emoji, self.session, self.storage, Requester.of(self.owner), spec.name, data
                ),
            )
            if emoji is None:
                continue
            self.written.add(emoji_storage_key(self.realm.id, emoji.file_name))
            if emoji.is_animated:
                self.written.add(emoji_storage_key(self.realm.id, still_file_name(emoji)))
            if spec.author in self.user_ids:
                emoji.author_id = self.user_ids[spec.author or ""]
            emoji.deactivated = spec.deactivated
            self.custom_emoji[emoji.name] = emoji.id
            self.summary.emoji += 1

    def _add_avatars(self, users: list[ImportedUser]) -> None:
        for spec in users:
            if spec.avatar is None or spec.key not in self.user_ids:
                continue
            data = spec.avatar()
            user = self.session.get(UserProfile, self.user_ids[spec.key])
            if data is None or user is None:
                self.report.skip("avatar whose picture could not be read", spec.key)
                continue
            if self._attempt(
                "avatar",
                spec.key,
                functools.partial(do_upload_avatar, self.session, self.storage, user, data),
            ):
                assert user.avatar_hash is not None
                for medium in (False, True):
                    self.written.add(uploaded_avatar_key(self.realm.id, user.avatar_hash, medium=medium))
                self.summary.avatars += 1

    def _add_user_settings(self, users: list[ImportedUser]) -> None:
        """Each person's own settings where the source carries them (a value Palaver would
        refuse is dropped); the rest keep the organization's defaults for new users."""
        specs = setting_specs()
        changes: dict[frozenset[str], list[dict[str, Any]]] = {}
        for spec in users:
            values = {k: v for k, v in spec.settings.items() if k in specs and specs[k].check(v)}
            if values and spec.key in self.user_ids:
                changes.setdefault(frozenset(values), []).append({"id": self.user_ids[spec.key], **values})
        self.session.flush()
        for rows in changes.values():
            self.session.execute(update(UserProfile), rows)

    def _add_groups(self) -> None:
        self.group_ids = {name: g.id for name, g in get_system_groups(self.session, self.realm.id).items()}
        created: list[tuple[ImportedGroup, int]] = []
        for spec in self.source.groups:
            members = sorted({self.user_ids[k] for k in spec.members if k in self.user_ids})
            subgroups = sorted({self.group_ids[n] for n in spec.subgroups if n in self.group_ids})
            new = NewUserGroup(
                name=spec.name, description=spec.description, members=members, subgroups=subgroups
            )
            group = self._attempt(
                "user group",
                spec.name,
                functools.partial(do_create_user_group, self.session, Requester.of(self.owner), new),
            )
            if group is not None:
                self.group_ids[spec.name] = group.id
                created.append((spec, group.id))
                self.summary.groups += 1
        # A group's settings may name any group, so they wait until every group exists.
        acting = Requester.of(self.owner)
        for spec, group_id in created:
            self._add_group_settings(
                spec.group_settings,
                GROUP_PERMISSION_SETTINGS,
                "user group",
                spec.name,
                functools.partial(self._update_group, acting, group_id),
            )

    def _update_group(self, acting: Requester, group_id: int, setting: str, value: GroupSettingValue) -> bool:
        changes = UserGroupChanges(group_settings={setting: GroupSettingUpdate(new=value)})
        do_update_user_group(self.session, acting, group_id, changes)
        return True

    def _add_group_settings(
        self,
        settings: dict[str, ImportedGroupSetting],
        known: Container[str],
        what: str,
        owner: str | None,
        setter: Callable[[str, GroupSettingValue], bool],
    ) -> None:
        """Set each of one organization's, channel's or group's permission settings (``what``
        names which, ``owner`` the channel or group) that Palaver has (``known``), each as an
        edit of it is checked: one Palaver lacks, one naming what was not imported or one
        the setting refuses is counted, and the default stays."""
        for setting, wanted in sorted(settings.items()):
            location = setting if owner is None else f"{owner}: {setting}"
            if setting not in known:
                self.report.skip(f"{what} permission setting Palaver does not have", location)
                continue
            value = self._group_setting_value(wanted, what, location)
            if value is not None and self._attempt(
                f"{what} permission setting", location, functools.partial(setter, setting, value)
            ):
                self.summary.group_settings += 1

    def _group_setting_value(
        self, spec: ImportedGroupSetting, what: str, location: str
    ) -> GroupSettingValue | None:
        """The setting's value by the new IDs, or None (counted) when it names a group or
        user not imported: Palaver's default applies then."""
        if spec.group is not None:
            group_id = self.group_ids.get(spec.group)
            if group_id is None:
                self.report.skip(
                    f"{what} permission setting naming a user group not imported (Palaver's default applies)",
                    location,
                )
            return group_id
        missing = [k for k in spec.members if k not in self.user_ids]
        missing += [name for name in spec.subgroups if name not in self.group_ids]
        if missing:
            self.report.skip(
                f"{what} permission setting naming a user or group not imported (Palaver's default applies)",
                location,
            )
            return None
        # A deactivated user holds no permission, and a setting's group keeps none.
        return AnonymousGroupValue(
            direct_members=sorted({self.user_ids[k] for k in spec.members if k in self.active_keys}),
            direct_subgroups=sorted({self.group_ids[name] for name in spec.subgroups}),
        )

    def _add_channel_group_settings(self) -> None:
        for spec in self.source.channels:
            stream_id = self.stream_ids.get(spec.key)
            if stream_id is None or not spec.group_settings:
                continue
            stream = self.session.get(Stream, stream_id)
            assert stream is not None
            self._add_group_settings(
                spec.group_settings,
                STREAM_GROUP_RULES,
                "channel",
                spec.name,
                functools.partial(self._set_channel_setting, stream),
            )

    def _set_channel_setting(self, stream: Stream, setting: str, value: GroupSettingValue) -> bool:
        rule = STREAM_GROUP_RULES[setting]
        resolved = parse_group_setting_value(self.session, self.realm.id, setting, value, rule)
        set_group_setting(self.session, stream, setting, resolved, self.realm.id)
        return True

    def _add_realm_group_settings(self) -> None:
        self._add_group_settings(
            self.source.realm_group_settings,
            REALM_GROUP_SETTINGS,
            "organization",
            None,
            functools.partial(self._update_realm_setting, Requester.of(self.owner)),
        )

    def _update_realm_setting(self, acting: Requester, setting: str, value: GroupSettingValue) -> bool:
        do_update_realm_settings(self.session, acting, {}, {setting: GroupSettingUpdate(new=value)})
        return True

    def _add_profile_fields(self) -> None:
        for spec in self.source.profile_fields:
            field = self._attempt(
                "custom profile field",
                spec.name,
                functools.partial(
                    do_create_profile_field,
                    self.session,
                    self.owner,
                    name=spec.name,
                    hint=spec.hint,
                    field_type=spec.field_type,
                    field_data=spec.field_data,
                    display_in_profile_summary=False,
                    required=False,
                    editable_by_user=True,
                ),
            )
            if field is None:
                continue
            self.summary.profile_fields += 1
            for key, value in spec.values.items():
                user = self.session.get(UserProfile, self.user_ids.get(key, 0))
                if user is None:
                    continue
                stored = (
                    [self.user_ids[k] for k in value if k in self.user_ids]
                    if isinstance(value, list)
                    else value
                )
                change = ProfileDataChange(field.id, stored)
                self._attempt(
                    "profile field value",
                    f"{spec.name}: {key}",
                    functools.partial(do_update_user_custom_profile_data, self.session, user, [change]),
                )

    def _add_linkifiers(self) -> None:
        for pattern, url_template in self.source.linkifiers:
            if self._attempt(
                "linkifier",
                pattern,
                functools.partial(do_add_linkifier, self.session, self.owner, pattern, url_template),
            ):
                self.summary.linkifiers += 1

    def _add_personal_settings(self) -> None:
        """Muted/followed topics, muted users and alert words: each person's own, so only
        their keys are checked (a row naming someone or a channel not imported is skipped)."""
        topics: dict[tuple[int, int, str], dict[str, Any]] = {}
        for spec in self.source.user_topics:
            user_id, stream_id = self.user_ids.get(spec.user), self.stream_ids.get(spec.channel)
            topic = spec.topic.strip()
            if user_id is None or stream_id is None:
                self.report.skip(
                    "topic setting of a user or channel not imported", f"{spec.user} {spec.channel}"
                )
                continue
            if spec.visibility_policy not in _VISIBILITY_POLICIES or len(topic) > MAX_TOPIC_LENGTH:
                self.report.skip(
                    "topic setting with an unknown policy or too long a topic", f"{spec.user} {topic!r}"
                )
                continue
            # One row per user and topic regardless of case, as the table's unique index says.
            topics[(user_id, stream_id, topic.lower())] = {
                "user_profile_id": user_id,
                "stream_id": stream_id,
                "topic_name": topic,
                "visibility_policy": spec.visibility_policy,
                "last_updated": spec.last_updated or utcnow(),
            }
        muted: dict[tuple[int, int], dict[str, Any]] = {}
        for mute in self.source.muted_users:
            user_id, muted_id = self.user_ids.get(mute.user), self.user_ids.get(mute.muted)
            if user_id is None or muted_id is None or user_id == muted_id:
                self.report.skip("muted user not imported (or oneself)", f"{mute.user} {mute.muted}")
                continue
            muted[(user_id, muted_id)] = {
                "user_profile_id": user_id,
                "muted_user_id": muted_id,
                "date_muted": mute.date_muted or utcnow(),
            }
        words: dict[tuple[int, str], dict[str, Any]] = {}
        for alert in self.source.alert_words:
            user_id, word = self.user_ids.get(alert.user), alert.word.strip()
            if user_id is None or not word or len(word) > MAX_ALERT_WORD_LENGTH:
                self.report.skip(
                    "alert word of a user not imported, empty or too long", f"{alert.user} {word!r}"
                )
                continue
            words[(user_id, word)] = {"realm_id": self.realm.id, "user_profile_id": user_id, "word": word}
        for model, rows in ((UserTopic, topics), (MutedUser, muted), (AlertWord, words)):
            if rows:
                self.session.execute(insert(_table(model)), list(rows.values()))
        self.summary.user_topics, self.summary.muted_users = len(topics), len(muted)
        self.summary.alert_words = len(words)

    def _add_channel_folders(self) -> dict[str, int]:
        """The organization's channel folders, in their order, archived ones included; the
        names are checked as the API checks them (a refusal is counted)."""
        ids: dict[str, int] = {}
        specs = sorted(self.source.channel_folders, key=lambda f: (f.order, f.key))
        for order, spec in enumerate(specs):
            try:
                name = check_channel_folder_name(spec.name)
                description = check_channel_folder_description(spec.description)
            except JsonableError as error:
                self.report.skip(f"channel folder refused ({error.msg})", spec.key)
                continue
            if channel_folder_name_in_use(self.session, self.realm.id, name):
                self.report.skip("channel folder whose name is already in use", spec.key)
                continue
            folder = ChannelFolder(
                realm_id=self.realm.id,
                name=name,
                description=description,
                rendered_description=render_markdown(description),
                creator_id=self.owner.id,
                is_archived=spec.is_archived,
                order=order,
            )
            self.session.add(folder)
            self.session.flush()
            ids[spec.key] = folder.id
        self.summary.channel_folders = len(ids)
        return ids

    def _add_scheduled_messages(self) -> None:
        """Messages scheduled on the old server and not sent yet: pending here as they were
        there, for the scheduler to send when due (an overdue one at its next run). The
        address is checked like a message's; the sender's permissions again at delivery."""
        rows = []
        for spec in self.source.scheduled_messages:
            message = spec.message
            sender_id = self.user_ids.get(message.sender)
            if sender_id is None or message.sender not in self.active_keys:
                self.report.skip("scheduled message of a user not imported or deactivated", message.location)
                continue
            stream_id, to = None, "[]"
            if message.channel is not None:
                stream_id = self.stream_ids.get(message.channel)
                if stream_id is None:
                    self.report.skip("scheduled message to a channel not imported", message.location)
                    continue
            else:
                members = message.direct_members or frozenset()
                ids = {self.user_ids[k] for k in members if k in self.user_ids}
                if len(ids) < len(members):
                    self.report.skip("scheduled message to a user not among the users", message.location)
                    continue
                to = orjson.dumps(direct_to(sender_id, sorted(ids | {sender_id}))).decode()
            if spec.reminder_target is not None:
                reminder = self._reminder(spec, sender_id)
                if reminder is not None:
                    rows.append(reminder)
                continue
            content, _attachments = self._content_with_files(message, sender_id)
            topic = message.topic.strip() if stream_id is not None else ""
            if not content.strip() or len(content) > MAX_MESSAGE_LENGTH or len(topic) > MAX_TOPIC_LENGTH:
                self.report.skip("scheduled message empty or too long", message.location)
                continue
            rows.append(
                self._scheduled_row(
                    spec,
                    sender_id,
                    delivery_type=DeliveryType.SEND_LATER,
                    stream_id=stream_id,
                    to=to,
                    topic=topic,
                    content=content,
                )
            )
        if rows:
            self.session.execute(insert(_table(ScheduledMessage)), rows)
        self.summary.scheduled_messages = sum(r["delivery_type"] == DeliveryType.SEND_LATER for r in rows)
        self.summary.reminders = len(rows) - self.summary.scheduled_messages

    def _reminder(self, spec: ImportedScheduledMessage, sender_id: int) -> dict[str, Any] | None:
        """A pending reminder: the Notification Bot's text is made again for the message's
        new ID (its links name the message), as a direct message to oneself."""
        assert spec.reminder_target is not None
        target = self.session.get(Message, self._new_message_id(spec.reminder_target) or -1)
        if target is None:
            self.report.skip("reminder about a message not imported", spec.message.location)
            return None
        content = reminder_content(self.session, target, spec.reminder_note, self.realm_url)
        if len(content) > MAX_MESSAGE_LENGTH:
            self.report.skip("reminder too long", spec.message.location)
            return None
        return self._scheduled_row(
            spec,
            sender_id,
            delivery_type=DeliveryType.REMIND,
            stream_id=None,
            to=orjson.dumps([sender_id]).decode(),
            topic="",
            content=content,
            reminder_target_message_id=target.id,
        )

    def _scheduled_row(
        self,
        spec: ImportedScheduledMessage,
        sender_id: int,
        *,
        delivery_type: DeliveryType,
        stream_id: int | None,
        to: str,
        topic: str,
        content: str,
        reminder_target_message_id: int | None = None,
    ) -> dict[str, Any]:
        """One scheduled_message row, rendered as its sender; every row names the same
        columns, so that the rows go in as one executemany."""
        context = self._sender_context(sender_id)
        return {
            "realm_id": self.realm.id,
            "sender_id": sender_id,
            "delivery_type": int(delivery_type),
            "type": "stream" if stream_id is not None else "private",
            "stream_id": stream_id,
            "to": to,
            "topic": topic,
            "content": content,
            "rendered_content": render_message(content, context).html,
            "scheduled_timestamp": spec.deliver_at,
            "read_by_sender": spec.read_by_sender,
            "sending_client": f"{self.source.source} import",
            "failed": spec.failed,
            "failure_message": spec.failure_message,
            "reminder_target_message_id": reminder_target_message_id,
            "reminder_note": spec.reminder_note if reminder_target_message_id is not None else None,
        }

    def _add_organization_extras(self) -> None:
        """Default channels, email domains, code playgrounds, and each person's status and
        saved snippets: through the actions, each checked as there (a refusal is counted)."""
        defaults = sorted({self.stream_ids[k] for k in self.source.default_channels if k in self.stream_ids})
        if defaults:
            self.session.execute(
                insert(_table(DefaultStream)), [{"realm_id": self.realm.id, "stream_id": s} for s in defaults]
            )
        self.summary.default_channels = len(defaults)
        for domain, allow_subdomains in self.source.realm_domains:
            if self._attempt(
                "email domain",
                domain,
                functools.partial(
                    do_add_realm_domain,
                    self.session,
                    Requester.of(self.owner),
                    domain,
                    allow_subdomains=allow_subdomains,
                ),
            ):
                self.summary.realm_domains += 1
        for name, language, url_template in self.source.playgrounds:
            if self._attempt(
                "code playground",
                name,
                functools.partial(
                    do_add_playground,
                    self.session,
                    Requester.of(self.owner),
                    name=name,
                    pygments_language=language,
                    url_template=url_template,
                ),
            ):
                self.summary.playgrounds += 1
        for status in self.source.user_statuses:
            user = self._active_user(status.user)
            emoji = self._emoji(status.emoji_name) if status.emoji_name else ("", "", "")
            if user is None or emoji is None:
                self.report.skip("status of a user not imported, or with an unknown emoji", status.user)
                continue
            kind, code, name = emoji

            def set_status(user: UserProfile, text: str, emoji: tuple[str, str, str]) -> bool:
                do_update_user_status(self.session, Requester.of(user), status_text=text, emoji=emoji)
                return True

            if self._attempt(
                "status",
                status.user,
                functools.partial(set_status, user, status.status_text, (name, code, kind)),
            ):
                self.summary.user_statuses += 1
        for snippet in self.source.saved_snippets:
            user = self._active_user(snippet.user)
            if user is None:
                self.report.skip("saved snippet of a user not imported", snippet.user)
                continue
            if self._attempt(
                "saved snippet",
                f"{snippet.user} {snippet.title!r}",
                functools.partial(
                    do_create_saved_snippet, self.session, Requester.of(user), snippet.title, snippet.content
                ),
            ):
                self.summary.saved_snippets += 1

    def _add_navigation_views(self) -> None:
        """Each person's pinned or hidden built-in views and named views, checked as the API
        checks them (a refusal is counted); a deactivated person's keep for their return."""
        for view in self.source.navigation_views:
            user = self.session.get(UserProfile, self.user_ids.get(view.user, 0))
            location = f"{view.user} {view.fragment!r}"
            if user is None:
                self.report.skip("navigation view of a user not imported", location)
                continue
            fragment = remap_fragment(view.fragment, self.new_ids)
            if fragment is None:
                self.report.skip("navigation view of a channel, person or message not imported", location)
                continue
            if self._attempt(
                "navigation view",
                location,
                functools.partial(
                    do_add_navigation_view,
                    self.session,
                    Requester.of(user),
                    fragment,
                    is_pinned=view.is_pinned,
                    name=view.name,
                ),
            ):
                self.summary.navigation_views += 1

    def _active_user(self, key: str) -> UserProfile | None:
        if key not in self.active_keys or key not in self.user_ids:
            return None
        return self.session.get(UserProfile, self.user_ids[key])

    # Messages -----------------------------------------------------------------------------

    def _add_messages(self, progress: TextIO | None) -> None:
        self.session.flush()
        users_by_id = {uid: UserRef(uid, name) for uid, name in self.names.items()}
        users_by_name: dict[str, UserRef] = {}
        for uid in sorted(self.names):
            users_by_name.setdefault(self.names[uid].lower(), users_by_id[uid])
        streams_by_name = {
            name.lower(): StreamRef(sid, name)
            for name, sid in (
                (n, s)
                for n, s in self.session.query(Stream.name, Stream.id).filter(
                    Stream.realm_id == self.realm.id
                )
            )
        }
        self.context = MarkdownContext(
            realm_url=self.realm_url,
            sender_id=0,
            sender_full_name="",
            users_by_name=users_by_name,
            users_by_id=users_by_id,
            groups_by_name={},
            streams_by_name=streams_by_name,
            linkifiers=linkifiers_for_realm(self.session, self.realm.id),
        )
        bar = Progress("messages", self.source.message_estimate, progress)
        batch: list[ImportedMessage] = []
        for message in self.source.messages():
            batch.append(message)
            if len(batch) >= self.batch_size:
                self._write_batch(batch)
                bar.advance(len(batch), "messages")
                batch = []
        if batch:
            self._write_batch(batch)
            bar.advance(len(batch), "messages")
        bar.finish()

    def _recipient(self, message: ImportedMessage) -> tuple[int, list[int], bool] | None:
        """(recipient ID, who receives it, is a channel message), or None to skip it."""
        if message.channel is not None:
            found = self.channels.get(message.channel)
            if found is None:
                self.report.skip("message in an unknown channel", message.location)
                return None
            return found[0], found[1], True
        members = message.direct_members or frozenset()
        ids = {self.user_ids[k] for k in members if k in self.user_ids}
        if len(ids) < len(members):
            self.report.skip("direct message to a user not among the users", message.location)
            return None
        ids.add(self.user_ids[message.sender])
        key = ",".join(map(str, sorted(ids)))
        known = self.dm_recipients.get(key)
        if known is not None:
            recipient_id = known[0]
        else:
            # Its members are this import's own users: no other transaction can make it.
            group = create_dm_group(self.session, set(ids))
            assert group.recipient_id is not None
            recipient_id = group.recipient_id
            self.dm_recipients.set(key, (recipient_id, ""))
        return recipient_id, sorted(ids), False

    def _prepare(self, message: ImportedMessage) -> _Prepared | None:
        """The message's row and what goes with it, or None (counted) to skip it."""
        if message.sender not in self.user_ids:
            self.report.skip("message from a user not among the users", message.location)
            return None
        target = self._recipient(message)
        if target is None:
            return None
        recipient_id, receivers, is_channel = target
        sender_id = self.user_ids[message.sender]
        original, attachment_ids = self._content_with_files(message, sender_id)
        later: list[str] = []
        content = remap_links(original, self.new_ids, later)
        if not content.strip():
            self.report.skip("empty message", message.location)
            return None
        if len(content) > MAX_MESSAGE_LENGTH:
            self.report.skip("message too long (shortened)", message.location)
            content = _shortened(content)
        topic = message.topic.strip() if is_channel else ""
        if len(topic) > MAX_TOPIC_LENGTH:
            self.report.skip("topic too long (shortened)", message.location)
            topic = topic[: MAX_TOPIC_LENGTH - 3] + "..."
        rendered = render_message(content, self._sender_context(sender_id))
        row = {
            "realm_id": self.realm.id,
            "sender_id": sender_id,
            "recipient_id": recipient_id,
            "subject": topic,
            "content": content,
            "rendered_content": rendered.html,
            "rendered_content_version": 1,
            "date_sent": message.date_sent,
            "last_edit_time": message.last_edit_time,
            "edit_history": self._edit_history(message),
            "has_attachment": bool(attachment_ids) or rendered.has_attachment,
            "has_image": rendered.has_image,
            "has_link": rendered.has_link,
            "is_channel_message": is_channel,
            "sending_client": f"{self.source.source} import",
        }
        flags = self._user_flags(message, receivers, is_channel, rendered)
        return _Prepared(message, row, flags, attachment_ids, relink=original if later else None)

    def _sender_context(self, sender_id: int) -> MarkdownContext:
        return dataclasses.replace(self.context, sender_id=sender_id, sender_full_name=self.names[sender_id])

    def _relink(self, message_id: int, item: _Prepared) -> None:
        """Rename the links of a message written before the message they name had its ID."""
        assert item.relink is not None
        content = _shortened(remap_links(item.relink, self.new_ids))
        if content == item.row["content"]:
            return
        html = render_message(content, self._sender_context(item.row["sender_id"])).html
        table = _table(Message)
        self.session.execute(
            update(table).where(table.c.id == message_id).values(content=content, rendered_content=html)
        )

    def _user_flags(
        self, message: ImportedMessage, receivers: list[int], is_channel: bool, rendered: RenderResult
    ) -> dict[int, int]:
        """Each receiver's flags: the source's own, or read history with mentions and stars."""
        if message.user_flags is not None:
            return {self.user_ids[k]: f for k, f in message.user_flags.items() if k in self.user_ids}
        sender_id = self.user_ids[message.sender]
        starred = {self.user_ids[k] for k in message.starred_by if k in self.user_ids}
        # Plain ints: IntFlag arithmetic per receiver was a tenth of an import's time.
        base = _READ | (0 if is_channel else _IS_PRIVATE)
        wildcard = 0
        if rendered.stream_wildcard:
            wildcard = _STREAM_WILDCARD
        elif rendered.topic_wildcard:
            wildcard = _TOPIC_WILDCARD
        mentioned = rendered.mentioned_user_ids
        flags: dict[int, int] = {}
        # A sender who left the channel still has their own message.
        for uid in (*receivers, sender_id):
            f = base
            if uid in mentioned:
                f |= _MENTIONED
            if uid != sender_id:
                f |= wildcard
            if uid in starred:
                f |= _STARRED
            flags[uid] = f
        return flags

    def _write_batch(self, batch: list[ImportedMessage]) -> None:
        prepared = [p for p in map(self._prepare, batch) if p is not None]
        if not prepared:
            return
        ids = list(
            self.session.scalars(
                insert(_table(Message)).returning(_table(Message).c.id, sort_by_parameter_order=True),
                [p.row for p in prepared],
            )
        )
        user_messages: list[tuple[int, int, int]] = []
        reactions: list[dict[str, Any]] = []
        links: list[dict[str, int]] = []
        named: list[tuple[str, int]] = []
        for message_id, item in zip(ids, prepared, strict=True):
            if item.row["is_channel_message"]:  # a channel's first message; conversations have none
                self.first_message.setdefault(item.row["recipient_id"], message_id)
            if item.message.source_id is not None:
                named.append((item.message.source_id, message_id))
            user_messages += [(uid, message_id, f) for uid, f in item.flags.items()]
            reactions += self._reactions(item.message, message_id)
            links += [{"attachment_id": a, "message_id": message_id} for a in item.attachment_ids]
            self.summary.messages += 1
            self.summary.direct_messages += not item.row["is_channel_message"]
        self.message_ids.set_many(named)
        for message_id, item in zip(ids, prepared, strict=True):
            if item.relink is not None:
                self._relink(message_id, item)
        if user_messages:
            self._insert_user_messages(user_messages)
        if reactions:
            self.session.execute(insert(_table(Reaction)), reactions)
            self.summary.reactions += len(reactions)
        if links:
            self.session.execute(insert(_table(AttachmentMessage)), links)

    def _insert_user_messages(self, rows: list[tuple[int, int, int]]) -> None:
        """The largest table, straight through the driver (COPY on PostgreSQL) as ``seed.py``
        writes it: SQLAlchemy's per-row work cost more than the database's. It is the
        session's connection, so the rows are part of the import's transaction."""
        raw: Any = self.session.connection().connection.driver_connection
        columns = "user_message (user_profile_id, message_id, flags)"
        cursor = raw.cursor()
        try:
            if self.session.get_bind().dialect.name == "postgresql":
                with cursor.copy(f"COPY {columns} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cursor.executemany(f"INSERT INTO {columns} VALUES (?, ?, ?)", rows)
        finally:
            cursor.close()

    def _reactions(self, message: ImportedMessage, message_id: int) -> list[dict[str, Any]]:
        rows: dict[tuple[int, str], dict[str, Any]] = {}
        for reaction in message.reactions:
            uid = self.user_ids.get(reaction.user)
            if uid is None:
                self.report.skip("reaction by a user not among the users", message.location)
                continue
            emoji = self._emoji(reaction.emoji_name)
            if emoji is None:
                self.report.skip(f"reaction with an unknown emoji :{reaction.emoji_name}:", message.location)
                continue
            reaction_type, code, name = emoji
            rows.setdefault(
                (uid, code),
                {
                    "user_profile_id": uid,
                    "message_id": message_id,
                    "emoji_name": name,
                    "emoji_code": code,
                    "reaction_type": reaction_type,
                },
            )
        return list(rows.values())

    def _edit_history(self, message: ImportedMessage) -> str | None:
        if not message.edits:
            return None
        entries = []
        for edit in message.edits:
            entry = {k: v for k, v in edit.items() if k != "prev_rendered_content"}
            if "user_id" in entry:
                entry["user_id"] = self.user_ids.get(str(entry["user_id"]))
            for key in ("stream", "prev_stream"):
                if key in entry:
                    stream_id = self.stream_ids.get(str(entry[key]))
                    if stream_id is None:
                        entry.pop(key)
                    else:
                        entry[key] = stream_id
            entries.append(entry)
        return orjson.dumps(entries).decode()

    def _attempt(self, what: str, location: str, work: Callable[[], T]) -> T | None:
        """Run one action in a savepoint; a refusal is counted and leaves no trace."""
        try:
            with self.session.begin_nested():
                return work()
        except JsonableError as e:
            self.report.skip(f"{what} refused ({e.msg})", location)
        except ValueError as e:
            self.report.skip(f"{what} refused ({e})", location)
        return None

    def _emoji(self, name: str) -> tuple[str, str, str] | None:
        """(reaction type, emoji code, name) for a custom emoji or a Unicode emoji's name (any alias)."""
        if name in self.custom_emoji:
            return "realm_emoji", str(self.custom_emoji[name]), name
        code = emoji_code_for_name(name)
        if code is not None:
            return "unicode_emoji", code, name
        return None

    def _content_with_files(self, message: ImportedMessage, sender_id: int) -> tuple[str, list[int]]:
        content = message.content
        attachment_ids: list[int] = []
        for spec in message.files:
            link = self.stored_files.get(spec.key) if spec.key else None
            if link is None:
                link = self._store_file(spec, sender_id, message.location)
                if link is None:
                    continue
                if spec.key:
                    self.stored_files.set(spec.key, link)
            attachment_id, url = link
            attachment_ids.append(attachment_id)
            if spec.replaces and spec.replaces in content:
                content = content.replace(spec.replaces, url)
                continue
            content = (
                f"{content}\n[{_link_text(spec.name)}]({url})"
                if content
                else f"[{_link_text(spec.name)}]({url})"
            )
        return content, attachment_ids

    def _store_file(self, spec: ImportedFile, sender_id: int, location: str) -> tuple[int, str] | None:
        data = spec.load()
        if data is None:
            self.report.skip("file that could not be downloaded or read", f"{location}: {spec.name}")
            return None
        path_id = new_path_id(self.realm.id, spec.name or "file")
        self.storage.save(path_id, data, spec.content_type)
        self.written.add(path_id)
        owner_id = self.user_ids.get(spec.owner, sender_id)
        attachment_id = self.session.scalar(
            insert(Attachment)
            .values(
                realm_id=self.realm.id,
                owner_id=owner_id,
                path_id=path_id,
                file_name=path_id.rsplit("/", 1)[-1],
                content_type=(spec.content_type or None) and spec.content_type[:255],
                size=len(data),
                create_time=spec.created or utcnow(),
                url_secret=new_url_secret(),
            )
            .returning(Attachment.id)
        )
        assert attachment_id is not None
        self.summary.files += 1
        return attachment_id, upload_url(path_id)


def _pick_owner(users: list[ImportedUser]) -> ImportedUser:
    """The first active human owner, else administrator, else member: they own the realm."""
    humans = [u for u in users if not u.is_bot and u.is_active]
    for role in (Role.OWNER, Role.ADMINISTRATOR):
        for user in humans:
            if user.role == role:
                return user
    humans[0].role = Role.OWNER
    return humans[0]


def _local_part(key: str) -> str:
    return re.sub(r"[^a-z0-9._-]", "-", key.lower()).strip("-.") or "user"


def _link_text(name: str) -> str:
    return re.sub(r"[\[\]\n]", "", name) or "file"


def dry_run(source: ImportSource) -> Summary:
    """The summary an import would print, reading everything and writing nothing.

    Files and emoji are counted, not downloaded.
    """
    started = time.monotonic()
    users = {u.key for u in source.users}
    summary = Summary(
        users=len(source.users),
        bots=sum(u.is_bot for u in source.users),
        deactivated=sum(not u.is_active for u in source.users),
        channels=len(source.channels),
        private_channels=sum(c.invite_only for c in source.channels),
        archived_channels=sum(c.archived for c in source.channels),
        emoji=len(source.emoji),
        groups=len(source.groups),
        group_settings=len(source.realm_group_settings)
        + sum(len(c.group_settings) for c in source.channels)
        + sum(len(g.group_settings) for g in source.groups),
        profile_fields=len(source.profile_fields),
        linkifiers=len(source.linkifiers),
        avatars=sum(u.avatar is not None for u in source.users),
        scheduled_messages=sum(s.reminder_target is None for s in source.scheduled_messages),
        reminders=sum(s.reminder_target is not None for s in source.scheduled_messages),
        channel_folders=len(source.channel_folders),
        user_statuses=len(source.user_statuses),
        saved_snippets=len(source.saved_snippets),
        navigation_views=len(source.navigation_views),
        default_channels=len(source.default_channels),
        realm_domains=len(source.realm_domains),
        playgrounds=len(source.playgrounds),
    )
    if not any(not u.is_bot and u.is_active for u in source.users):
        raise ImportInputError("the export has no active human user to own the organization")
    with ScratchMap() as topics:  # by channel key and lowered topic: on disk, they are many
        _dry_run_messages(source, summary, users, {c.key for c in source.channels}, topics)
        summary.topics = len(topics)
    summary.seconds = time.monotonic() - started
    return summary


def _dry_run_messages(
    source: ImportSource, summary: Summary, users: set[str], channels: set[str], topics: ScratchMap
) -> None:
    report = source.report
    for message in source.messages():
        if message.sender not in users:
            report.skip("message from a user not among the users", message.location)
            continue
        if message.channel is not None and message.channel not in channels:
            report.skip("message in an unknown channel", message.location)
            continue
        if message.direct_members is not None and not message.direct_members <= users:
            report.skip("direct message to a user not among the users", message.location)
            continue
        summary.messages += 1
        summary.direct_messages += message.channel is None
        summary.reactions += len({(r.user, r.emoji_name) for r in message.reactions if r.user in users})
        summary.files += len(message.files)
        if message.channel is not None:
            topics.add(orjson.dumps([message.channel, message.topic.strip().lower()]).decode())
