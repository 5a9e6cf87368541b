"""Creating an organization from an ``ImportSource``, in one transaction.

The realm, its owner and its channels go through the actions (their groups, settings and
permissions must be exactly what a new organization gets); users, subscriptions,
messages, their per-user rows and reactions are inserted in batches with no events (an
import has no clients listening, and ``do_create_user`` per user is quadratic). Files are
stored as they come; if anything fails, the transaction rolls back and the stored files
are deleted, so a failed import leaves nothing behind.

Each step is a function over the import's one ``WriteContext`` (``write_context.py``): the
organization, its people and channels here, permission settings in ``write_permissions.py``,
messages in ``write_messages.py``, the rest in ``write_extras.py``; ``dry_run.py`` counts
without writing.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
import unicodedata
from datetime import timedelta
from typing import Any, TextIO

import orjson
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from palaver.actions.avatars import do_upload_avatar
from palaver.actions.channel_creation import do_create_channel
from palaver.actions.new_channels import NewChannel
from palaver.actions.realm import check_string_id, do_create_realm
from palaver.actions.realm_emoji import do_add_realm_emoji
from palaver.db.transaction import transaction
from palaver.importers import write_extras, write_messages, write_permissions
from palaver.importers.model import (
    REALM_SETTINGS,
    ImportedChannel,
    ImportedUser,
    ImportInputError,
    ImportSource,
    Summary,
    clean_full_name,
)
from palaver.importers.threads import ScratchMap
from palaver.importers.write_context import WriteContext, table_of
from palaver.lib.avatars import uploaded_avatar_key
from palaver.lib.bots import check_interface_type, check_payload_url
from palaver.lib.embedded_bots import check_embedded_bot
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    AnonymousGroupValue,
)
from palaver.lib.limits import MAX_STREAM_NAME_LENGTH
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import get_realm_by_string_id, realm_email_host, realm_url
from palaver.lib.realm_emoji import emoji_storage_key, still_file_name
from palaver.lib.storage import FileStorage, make_storage
from palaver.lib.subscriptions import SUBSCRIPTION_PROPERTIES
from palaver.lib.user_groups import direct_system_groups_for, get_system_groups
from palaver.lib.user_settings import setting_specs
from palaver.lib.users import api_email_for, check_email
from palaver.models import Realm, RealmUserDefault, Role, UserProfile
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.bots import BotService
from palaver.models.channels import Stream, Subscription
from palaver.models.groups import UserGroupMembership
from palaver.models.messages import Message, Reaction, UserMessage
from palaver.models.names import name_key
from palaver.models.realm_audit_log import AuditLogEventType, RealmAuditLog
from palaver.models.requester import Requester
from palaver.models.users import BotType
from palaver.services import Services
from palaver.timeutil import utcnow

# A member's own channel settings an import carries over: those the API lets them set.
_SUBSCRIPTION_SETTINGS = frozenset(SUBSCRIPTION_PROPERTIES)
MAX_REALM_NAME_LENGTH = 40
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
                ctx = WriteContext(services, session, source, storage, written, batch_size)
                try:
                    summary = _run(ctx, string_id, name or source.name, progress)
                finally:
                    ctx.close()
        except BaseException:
            for key in written:  # the rows went with the rollback; so go their files
                storage.delete(key)
            raise
        _analyze(session)
    summary.seconds = time.monotonic() - started
    return summary


def _run(ctx: WriteContext, string_id: str, name: str, progress: TextIO | None) -> Summary:
    name = name.strip() or string_id
    if len(name) > MAX_REALM_NAME_LENGTH:
        ctx.report.warnings.append(f"organization name shortened to {MAX_REALM_NAME_LENGTH} characters")
        name = name[:MAX_REALM_NAME_LENGTH].strip()
    probe = Realm(string_id=string_id, name=name)
    ctx.email_host = realm_email_host(ctx.services.settings, probe)
    users = _checked_users(ctx)
    owner_spec = _pick_owner(users)
    realm, owner = do_create_realm(
        ctx.session,
        string_id=string_id,
        name=name,
        owner_email=owner_spec.email,
        owner_full_name=owner_spec.full_name,
        owner_password_hash=None,
        email_host=ctx.email_host,
        description=ctx.source.description,
        default_channels=False,
    )
    ctx.realm, ctx.owner = realm, owner
    for setting, value in ctx.source.realm_settings.items():
        if setting in REALM_SETTINGS and isinstance(value, type(getattr(realm, setting))):
            setattr(realm, setting, value)
    ctx.realm_url = realm_url(ctx.services.settings, realm)
    owner.timezone = owner_spec.timezone
    owner.is_imported_stub = True
    if owner_spec.date_joined is not None:
        owner.date_joined = owner_spec.date_joined
    ctx.user_ids[owner_spec.key] = owner.id
    ctx.names[owner.id] = owner.full_name
    _add_users(ctx, [u for u in users if u is not owner_spec])
    ctx.active_keys = {u.key for u in users if u.is_active}
    ctx.active_keys |= {alias for alias, kept in ctx.aliases.items() if kept in ctx.active_keys}
    _count_users(ctx, users)
    ctx.folder_ids = write_extras.add_channel_folders(ctx)
    for spec in ctx.source.channels:
        _add_channel(ctx, spec)
    _add_avatars(ctx, users)
    _add_user_settings(ctx, users)
    write_permissions.add_groups(ctx)
    write_permissions.add_channel_group_settings(ctx)
    write_extras.add_profile_fields(ctx)
    write_extras.add_linkifiers(ctx)
    write_extras.add_personal_settings(ctx)
    _add_emoji(ctx)
    write_messages.add_messages(ctx, progress)
    write_extras.add_scheduled_messages(ctx)
    write_extras.add_organization_extras(ctx)
    write_extras.add_navigation_views(ctx)
    for spec in ctx.source.channels:
        stream_id = ctx.stream_ids.get(spec.key)
        if stream_id is None:
            continue
        recipient_id = ctx.channels[spec.key][0]
        values: dict[str, Any] = {"first_message_id": ctx.first_message.get(recipient_id)}
        if spec.archived:
            values["deactivated"] = True
        ctx.session.execute(update(Stream).where(Stream.id == stream_id).values(**values))
    # Last: until now the owner acted under a new organization's permissions (one to create
    # groups and emoji...), whatever the imported ones grant.
    write_permissions.add_realm_group_settings(ctx)
    ctx.summary.topics = _count_topics(ctx)
    ctx.summary.realm_id = realm.id
    _record_import(ctx)
    return ctx.summary


def _count_topics(ctx: WriteContext) -> int:
    """The channels' topics as the server tells them apart (``lower(subject)``, the index
    ``ix_message_recipient_id_lower_subject_id``), counted by the database at the end:
    a set of them in memory grew with the history."""
    recipients = [recipient_id for recipient_id, _members in ctx.channels.values()]
    if not recipients:
        return 0
    lowered = func.lower(Message.subject)
    topics = select(Message.recipient_id, lowered).where(Message.recipient_id.in_(recipients)).distinct()
    return int(ctx.session.scalar(select(func.count()).select_from(topics.subquery())) or 0)


def _record_import(ctx: WriteContext) -> None:
    """The organization's audit log says where it came from and what came across, in the
    import's own transaction (an import that rolls back leaves no record)."""
    extra = {
        "source": ctx.source.source,
        "summary": {
            k: v for k, v in dataclasses.asdict(ctx.summary).items() if k not in ("realm_id", "seconds")
        },
        "skipped": dict(sorted(ctx.report.skipped.items())),
    }
    ctx.session.add(
        RealmAuditLog(
            realm_id=ctx.realm.id,
            acting_user_id=None,
            event_type=int(AuditLogEventType.REALM_IMPORTED),
            event_time=utcnow(),
            extra_data=orjson.dumps(extra).decode(),
        )
    )


def _checked_users(ctx: WriteContext) -> list[ImportedUser]:
    seen: dict[str, ImportedUser] = {}
    kept: list[ImportedUser] = []
    for user in ctx.source.users:
        user.full_name = clean_full_name(user.full_name, user.key)
        email = user.email.strip().lower()
        if not email:
            email = f"{_local_part(user.key)}@{ctx.email_host}"
        try:
            email = check_email(email)
        except JsonableError:
            ctx.report.skip("user with an invalid email (their messages are skipped too)", user.key)
            continue
        user.email = email
        if email in seen:
            ctx.report.skip("user with a duplicate email (merged into the first)", user.key)
            ctx.aliases[user.key] = seen[email].key
            continue
        seen[email] = user
        kept.append(user)
    if not any(not u.is_bot and u.is_active for u in kept):
        raise ImportInputError("the export has no active human user to own the organization")
    return kept


def _count_users(ctx: WriteContext, users: list[ImportedUser]) -> None:
    ctx.summary.users = len(users)
    ctx.summary.bots = sum(u.is_bot for u in users)
    ctx.summary.deactivated = sum(not u.is_active for u in users)
    for alias, target in ctx.aliases.items():
        ctx.user_ids[alias] = ctx.user_ids[target]


def _add_users(ctx: WriteContext, users: list[ImportedUser]) -> None:
    session, realm = ctx.session, ctx.realm
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
            bot_type=_bot_type(ctx, spec) if spec.is_bot else None,
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
        user.email = api_email_for(ctx.email_host, user)
        ctx.user_ids[spec.key] = user.id
        ctx.names[user.id] = user.full_name
        wanted = direct_system_groups_for(user.role, user.date_joined <= full_after)
        memberships += [{"user_group_id": groups[g].id, "user_profile_id": user.id} for g in wanted]
    for user, spec in created:
        if spec.is_bot:
            owner_id = ctx.user_ids.get(spec.bot_owner or "", ctx.owner.id)
            user.bot_owner_id = owner_id
    if memberships:
        session.execute(insert(table_of(UserGroupMembership)), memberships)
    services = [
        {
            "bot_profile_id": user.id,
            "name": service.name[:100],
            "base_url": service.base_url,
            # A new secret: the receiver learns it anew, as after Zulip's own import.
            "token": generate_api_key(),
            "interface": service.interface,
        }
        for user, spec in created
        if user.bot_type in (BotType.OUTGOING_WEBHOOK, BotType.EMBEDDED)
        for service in spec.services
    ]
    if services:
        session.execute(insert(table_of(BotService)), services)
    ctx.summary.bot_services = len(services)
    session.flush()


def _add_channel(ctx: WriteContext, spec: ImportedChannel) -> None:
    name = spec.name.strip().lstrip("#").strip() or spec.key
    name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cs", "Cn"))
    if len(name) > MAX_STREAM_NAME_LENGTH:
        ctx.report.skip("channel name too long (shortened)", spec.key)
        name = name[:MAX_STREAM_NAME_LENGTH].strip()
    taken = ctx.channel_names
    if name_key(name) in taken:
        ctx.report.skip("duplicate channel name (renamed)", f"{spec.key} {name!r}")
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
        {ctx.user_ids[k] for k in spec.administrators if k in ctx.user_ids and k in ctx.active_keys}
    )
    if administrators:
        new.group_settings["can_administer_channel_group"] = AnonymousGroupValue(
            direct_members=administrators
        )
    stream = None
    if spec.is_web_public:
        # The new organization's settings may not allow web-public channels.
        stream = ctx.attempt(
            "web-public channel (imported as public)",
            spec.key,
            functools.partial(do_create_channel, ctx.session, Requester.of(ctx.owner), new),
        )
        new.is_web_public = False
    if stream is None:
        stream = do_create_channel(ctx.session, Requester.of(ctx.owner), new)
    if spec.date_created is not None:
        stream.date_created = spec.date_created
    if spec.creator is not None and spec.creator in ctx.user_ids:
        stream.creator_id = ctx.user_ids[spec.creator]
    if spec.folder is not None:
        stream.folder_id = ctx.folder_ids.get(spec.folder)
        if stream.folder_id is None:
            ctx.report.skip("channel in a folder not in the export (left out of folders)", spec.key)
    assert stream.recipient_id is not None
    members = sorted({ctx.user_ids[m] for m in spec.members if m in ctx.user_ids})
    unknown = [m for m in spec.members if m not in ctx.user_ids]
    for key in unknown:
        ctx.report.skip("channel member not among the users", f"{spec.key}: {key}")
    settings = {ctx.user_ids[k]: v for k, v in spec.member_settings.items() if k in ctx.user_ids}
    if members:
        ctx.session.execute(
            insert(table_of(Subscription)),
            [
                {
                    "user_profile_id": u,
                    "recipient_id": stream.recipient_id,
                    **{k: v for k, v in settings.get(u, {}).items() if k in _SUBSCRIPTION_SETTINGS},
                }
                for u in members
            ],
        )
    ctx.channels[spec.key] = (stream.recipient_id, members)
    ctx.stream_ids[spec.key] = stream.id
    ctx.summary.channels += 1
    ctx.summary.private_channels += spec.invite_only
    ctx.summary.archived_channels += spec.archived


def _add_emoji(ctx: WriteContext) -> None:
    for spec in ctx.source.emoji:
        data = spec.load()
        if data is None:
            ctx.report.skip("custom emoji whose image could not be read", spec.name)
            continue
        emoji = ctx.attempt(
            "custom emoji",
            spec.name,
            functools.partial(
                do_add_realm_emoji, ctx.session, ctx.storage, Requester.of(ctx.owner), spec.name, data
            ),
        )
        if emoji is None:
            continue
        ctx.written.add(emoji_storage_key(ctx.realm.id, emoji.file_name))
        if emoji.is_animated:
            ctx.written.add(emoji_storage_key(ctx.realm.id, still_file_name(emoji)))
        if spec.author in ctx.user_ids:
            emoji.author_id = ctx.user_ids[spec.author or ""]
        emoji.deactivated = spec.deactivated
        ctx.custom_emoji[emoji.name] = emoji.id
        ctx.summary.emoji += 1


def _add_avatars(ctx: WriteContext, users: list[ImportedUser]) -> None:
    for spec in users:
        if spec.avatar is None or spec.key not in ctx.user_ids:
            continue
        data = spec.avatar()
        user = ctx.session.get(UserProfile, ctx.user_ids[spec.key])
        if data is None or user is None:
            ctx.report.skip("avatar whose picture could not be read", spec.key)
            continue
        if ctx.attempt(
            "avatar",
            spec.key,
            functools.partial(do_upload_avatar, ctx.session, ctx.storage, user, data),
        ):
            assert user.avatar_hash is not None
            for medium in (False, True):
                ctx.written.add(uploaded_avatar_key(ctx.realm.id, user.avatar_hash, medium=medium))
            ctx.summary.avatars += 1


def _add_user_settings(ctx: WriteContext, users: list[ImportedUser]) -> None:
    """Each person's own settings where the source carries them (a value Palaver would
    refuse is dropped); the rest keep the organization's defaults for new users."""
    specs = setting_specs()
    changes: dict[frozenset[str], list[dict[str, Any]]] = {}
    for spec in users:
        values = {k: v for k, v in spec.settings.items() if k in specs and specs[k].check(v)}
        if values and spec.key in ctx.user_ids:
            changes.setdefault(frozenset(values), []).append({"id": ctx.user_ids[spec.key], **values})
    ctx.session.flush()
    for rows in changes.values():
        ctx.session.execute(update(UserProfile), rows)


# The tables an import fills by the million.
_ANALYZED = (Message, UserMessage, Reaction, AttachmentMessage, Attachment, Subscription, UserProfile)


def _analyze(session: Session) -> None:
    """On PostgreSQL, fresh planner statistics for what the import wrote. Until autovacuum
    gets to a table of millions of new rows the planner guesses from none: after a large
    import every read of it by message ID was planned as a bitmap scan of a large share of
    the table, with JIT compilation per query, until then. SQLite plans from its indexes
    alone without statistics."""
    if session.get_bind().dialect.name != "postgresql":
        return
    # Through the driver: a textual statement through SQLAlchemy counts as changing every
    # cached table (cache/writes.py), and this changes none.
    raw: Any = session.connection().connection.driver_connection
    with raw.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(table_of(model).name for model in _ANALYZED))
    session.commit()


def _bot_type(ctx: WriteContext, spec: ImportedUser) -> int:
    """The bot's kind, as Palaver would have accepted it: an outgoing-webhook bot needs an
    endpoint that is a URL, an embedded bot one of Palaver's handlers; others (counted)
    come in as generic bots, whose API keys work as before."""
    kind = spec.bot_type or BotType.GENERIC
    try:
        if kind not in set(BotType):
            raise JsonableError("unknown kind")
        if kind == BotType.OUTGOING_WEBHOOK:
            if not spec.services:
                raise JsonableError("no endpoint")
            for service in spec.services:
                check_payload_url("base_url", service.base_url)
                check_interface_type(service.interface)
        if kind == BotType.EMBEDDED:
            if len(spec.services) != 1:
                raise JsonableError("no handler")
            check_embedded_bot(spec.services[0].name, None)
    except JsonableError as e:
        ctx.report.skip(f"bot kind refused ({e.msg}; imported as a generic bot)", spec.key)
        return int(BotType.GENERIC)
    return int(kind)


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
