"""Writes to bots: creation, edits by their owner or an administrator, owner changes.

User-level writes (names, keys, deactivation) are the ones of ``actions.users``; this module
adds what only bots have. ``realm_bot`` events go to the realm's administrators and the
bot's owner, who are the ones who manage it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.actions.user_creation import bot_event_recipients, bot_payload, send_bot_added
from palaver.actions.users import do_change_full_name, do_change_user_role, do_create_user
from palaver.cache import realm_settings
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.bots import (
    bot_extra_fields,
    check_interface_type,
    check_payload_url,
    check_short_name,
    get_bot_services,
)
from palaver.lib.channels import access_stream_by_name
from palaver.lib.embedded_bots import check_embedded_bot
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import active_user_ids, get_realm
from palaver.lib.user_groups import is_user_in_group
from palaver.lib.users import check_full_name, get_realm_user, get_user_by_delivery_email
from palaver.models.bots import BotDefaults, BotService, ServiceInterface
from palaver.models.requester import Requester
from palaver.models.service_bots import BotConfigData
from palaver.models.users import BotType, UserProfile


def _send_bot_change(tx: Tx, session: Session, bot: UserProfile, **changes: object) -> None:
    tx.send_event(
        bot.realm_id,
        ev.RealmBotUpdate(bot=ev.BotChange(user_id=bot.id, **changes)),
        bot_event_recipients(session, bot),
    )


def _check_name_available(session: Session, realm_id: int, full_name: str) -> None:
    taken = session.scalar(
        select(UserProfile.id).where(
            UserProfile.realm_id == realm_id,
            UserProfile.is_active,
            func.lower(UserProfile.full_name) == full_name.lower(),
        )
    )
    if taken is not None:
        raise JsonableError("Name is already in use!")


def check_bot_creation_allowed(session: Session, user: Requester, bot_type: int) -> None:
    if user.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")
    if user.is_guest:
        raise JsonableError("Not allowed for guest users")
    if bot_type not in set(BotType):
        raise JsonableError("Invalid bot type")
    realm = realm_settings(session, user.realm_id)
    if is_user_in_group(session, user.user_id, realm.can_create_bots_group):
        return
    # Incoming webhooks can only post, so a realm may let more people create those.
    if bot_type == BotType.INCOMING_WEBHOOK and is_user_in_group(
        session, user.user_id, realm.can_create_write_only_bots_group
    ):
        return
    raise JsonableError("Insufficient permission")


@dataclass(frozen=True)
class BotDefaultsChange:
    """New default channels: None leaves one as it is, "" clears a channel."""

    default_sending_stream: str | None = None
    default_events_register_stream: str | None = None
    default_all_public_streams: bool | None = None


def _apply_defaults(
    tx: Tx,
    session: Session,
    acting: Requester,
    bot: UserProfile,
    change: BotDefaultsChange,
    *,
    announce: bool = True,
) -> None:
    defaults = session.get(BotDefaults, bot.id)
    if defaults is None:
        defaults = BotDefaults(bot_profile_id=bot.id, default_all_public_streams=False)
        session.add(defaults)
    for name in ("default_sending_stream", "default_events_register_stream"):
        stream_name: str | None = getattr(change, name)
        if stream_name is None:
            continue
        stream_id = None
        if stream_name != "":
            stream_id = access_stream_by_name(session, acting, stream_name, require_content_access=True).id
        if getattr(defaults, f"{name}_id") != stream_id:
            setattr(defaults, f"{name}_id", stream_id)
            if announce:
                _send_bot_change(tx, session, bot, **{name: stream_name or None})
    if (
        change.default_all_public_streams is not None
        and defaults.default_all_public_streams != change.default_all_public_streams
    ):
        defaults.default_all_public_streams = change.default_all_public_streams
        if announce:
            _send_bot_change(tx, session, bot, default_all_public_streams=change.default_all_public_streams)
    session.flush()


def _send_services(tx: Tx, session: Session, bot: UserProfile) -> None:
    session.flush()
    services = bot_extra_fields(session, bot)["services"]
    _send_bot_change(tx, session, bot, services=services)


def do_create_bot(
    session: Session,
    user: Requester,
    *,
    full_name: str,
    short_name: str,
    bot_type: int,
    email_host: str,
    payload_url: str = "",
    service_name: str | None = None,
    interface_type: int = ServiceInterface.GENERIC,
    defaults: BotDefaultsChange | None = None,
    config_data: dict[str, str] | None = None,
) -> UserProfile:
    check_bot_creation_allowed(session, user, bot_type)
    if bot_type == BotType.EMBEDDED:
        service_name, config_data = check_embedded_bot(service_name, config_data)
    short_name = check_short_name(short_name)
    full_name = check_full_name(full_name)
    check_interface_type(interface_type)
    if bot_type == BotType.OUTGOING_WEBHOOK:
        check_payload_url("payload_url", payload_url)
    email = f"{short_name}-bot@{email_host}"
    with transaction(session) as tx:
        if get_user_by_delivery_email(session, user.realm_id, email) is not None:
            raise JsonableError("Username already in use")
        _check_name_available(session, user.realm_id, full_name)
        bot = do_create_user(
            session,
            get_realm(session, user.realm_id),
            email=email,
            full_name=full_name,
            password_hash=None,
            email_host=email_host,
            bot_type=bot_type,
            bot_owner_id=user.user_id,
            announce_bot=False,
        )
        if defaults is not None:
            _apply_defaults(tx, session, user, bot, defaults, announce=False)
        if bot_type in (BotType.OUTGOING_WEBHOOK, BotType.EMBEDDED):
            session.add(
                BotService(
                    bot_profile_id=bot.id,
                    name=(service_name or short_name)[:100],
                    base_url=payload_url,
                    token=generate_api_key(),
                    interface=interface_type,
                )
            )
        if bot_type == BotType.EMBEDDED:
            # The embedded bot's settings (lib/embedded_bots.py), read by get_config_info.
            session.add_all(
                BotConfigData(bot_profile_id=bot.id, key=key, value=value)
                for key, value in (config_data or {}).items()
            )
        session.flush()
        send_bot_added(tx, session, bot)
    return bot


def do_change_bot_owner(session: Session, bot: UserProfile, owner: UserProfile) -> None:
    """Give the bot to another user; the old owner stops managing it, the new one starts.

    Administrators manage every bot anyway, so they hear an update rather than a
    delete/add pair.
    """
    with transaction(session) as tx:
        previous = session.get(UserProfile, bot.bot_owner_id) if bot.bot_owner_id is not None else None
        if previous is not None and previous.id == owner.id:
            return
        bot.bot_owner_id = owner.id
        session.flush()
        update_recipients = set(bot_event_recipients(session, bot))
        if previous is not None and previous.is_active and not previous.is_realm_admin:
            tx.send_event(bot.realm_id, ev.RealmBotDelete(bot=ev.BotRef(user_id=bot.id)), [previous.id])
        if previous is not None:
            update_recipients.discard(previous.id)
        if not owner.is_realm_admin:
            payload = bot_payload(session, bot)
            tx.send_event(bot.realm_id, ev.RealmBotAdd(bot=payload), [owner.id])
            update_recipients.discard(owner.id)
        tx.send_event(
            bot.realm_id,
            ev.RealmBotUpdate(bot=ev.BotChange(user_id=bot.id, owner_id=owner.id)),
            update_recipients,
        )
        tx.send_event(
            bot.realm_id,
            ev.RealmUserUpdate(person=ev.PersonBotOwner(user_id=bot.id, bot_owner_id=owner.id)),
            active_user_ids(session, bot.realm_id),
        )


def do_update_bot(
    session: Session,
    acting: Requester,
    bot: UserProfile,
    *,
    full_name: str | None = None,
    role: int | None = None,
    bot_owner_id: int | None = None,
    defaults: BotDefaultsChange | None = None,
    service_payload_url: str | None = None,
    service_interface: int = ServiceInterface.GENERIC,
    config_data: dict[str, str] | None = None,
) -> None:
    """All the changes apply together or not at all."""
    with transaction(session) as tx:
        if full_name is not None:
            name = check_full_name(full_name)
            if name != bot.full_name:
                if name.lower() != bot.full_name.lower():
                    _check_name_available(session, bot.realm_id, name)
                do_change_full_name(session, bot, name)
        if role is not None and role != bot.role:
            if not acting.is_realm_admin:
                raise OrganizationAdministratorRequiredError()
            do_change_user_role(session, bot, role, acting_user=acting)
        if bot_owner_id is not None:
            owner = get_realm_user(session, bot.realm_id, bot_owner_id)
            if owner is None:
                raise JsonableError("Failed to change owner, no such user")
            if not owner.is_active:
                raise JsonableError("Failed to change owner, user is deactivated")
            if owner.is_bot:
                raise JsonableError("Failed to change owner, bots can't own other bots")
            do_change_bot_owner(session, bot, owner)
        if defaults is not None:
            _apply_defaults(tx, session, acting, bot, defaults)
        if service_payload_url is not None:
            check_interface_type(service_interface)
            check_payload_url("service_payload_url", service_payload_url)
            services = get_bot_services(session, bot.id)
            if not services:
                raise JsonableError("This bot has no outgoing webhook service")
            for service in services:
                service.base_url, service.interface = service_payload_url, service_interface
            _send_services(tx, session, bot)
        if config_data is not None:
            _set_bot_config(session, bot, config_data)
            _send_services(tx, session, bot)


def _set_bot_config(session: Session, bot: UserProfile, config_data: dict[str, str]) -> None:
    """Set (add or replace) an embedded bot's configuration keys."""
    if bot.bot_type != BotType.EMBEDDED:
        raise JsonableError("Only embedded bots have config_data")
    services = get_bot_services(session, bot.id)
    _, config = check_embedded_bot(services[0].name if services else None, config_data)
    existing = {
        row.key: row
        for row in session.scalars(select(BotConfigData).where(BotConfigData.bot_profile_id == bot.id))
    }
    for key, value in config.items():
        if key in existing:
            existing[key].value = value
        else:
            session.add(BotConfigData(bot_profile_id=bot.id, key=key, value=value))
