"""Bot reads: who may manage a bot, and the bot fields beyond the user row.

A bot's default channels and outgoing-webhook service live in their own tables
(``models/bots.py``); ``bot_extra_fields`` gives them as the Bot object of the API names them,
for GET /bots, realm_bot events and ``realm_bots`` in /register.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.users import get_realm_user
from palaver.models.bots import BotDefaults, BotService, ServiceInterface
from palaver.models.channels import Stream
from palaver.models.requester import Requester
from palaver.models.service_bots import BotConfigData
from palaver.models.users import BotType, UserProfile

# What the local part of a bot's email may hold before "-bot".
_SHORT_NAME = re.compile(r"^[A-Za-z0-9_.+\-]+$")
MAX_SHORT_NAME_LENGTH = 60


def check_short_name(short_name: str) -> str:
    short_name = short_name.strip()
    if not short_name or len(short_name) > MAX_SHORT_NAME_LENGTH or _SHORT_NAME.match(short_name) is None:
        raise JsonableError("Bad name or username")
    return short_name


def check_interface_type(interface: int) -> int:
    if interface not in (ServiceInterface.GENERIC, ServiceInterface.SLACK):
        raise JsonableError("Invalid interface type")
    return interface


def check_payload_url(var_name: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise JsonableError(f"{var_name} is not a URL")
    return url


def access_bot_by_id(session: Session, user: Requester, bot_id: int) -> UserProfile:
    """A bot the user may manage: their own, or any bot of the realm for administrators."""
    bot = get_realm_user(session, user.realm_id, bot_id)
    if bot is None or not bot.is_bot:
        raise JsonableError("No such bot")
    if not user.is_realm_admin and bot.bot_owner_id != user.user_id:
        raise JsonableError("Insufficient permission")
    return bot


def get_bot_services(session: Session, bot_id: int) -> list[BotService]:
    return list(
        session.scalars(select(BotService).where(BotService.bot_profile_id == bot_id).order_by(BotService.id))
    )


def format_service(service: BotService) -> dict[str, Any]:
    return {"base_url": service.base_url, "interface": service.interface, "token": service.token}


def bots_extra_fields(session: Session, bots: Sequence[UserProfile]) -> dict[int, dict[str, Any]]:
    """default_sending_stream, default_events_register_stream, default_all_public_streams
    and services of the Bot object, for each bot by ID (in a fixed number of queries)."""
    bot_ids = [bot.id for bot in bots]
    if not bot_ids:
        return {}
    defaults = {
        d.bot_profile_id: d
        for d in session.scalars(select(BotDefaults).where(BotDefaults.bot_profile_id.in_(bot_ids)))
    }
    stream_ids = {
        stream_id
        for d in defaults.values()
        for stream_id in (d.default_sending_stream_id, d.default_events_register_stream_id)
        if stream_id is not None
    }
    stream_names: dict[int, str] = {}
    if stream_ids:
        rows = session.execute(select(Stream.id, Stream.name).where(Stream.id.in_(stream_ids)))
        stream_names = {stream_id: name for stream_id, name in rows}
    services: dict[int, list[dict[str, Any]]] = {bot_id: [] for bot_id in bot_ids}
    embedded = {bot.id for bot in bots if bot.bot_type == BotType.EMBEDDED}
    configs: dict[int, dict[str, str]] = {bot_id: {} for bot_id in embedded}
    if embedded:
        for row in session.scalars(select(BotConfigData).where(BotConfigData.bot_profile_id.in_(embedded))):
            configs[row.bot_profile_id][row.key] = row.value
    for service in session.scalars(
        select(BotService).where(BotService.bot_profile_id.in_(bot_ids)).order_by(BotService.id)
    ):
        if service.bot_profile_id in embedded:
            # Embedded bots show which bot runs and its settings instead of a URL.
            entry = {"service_name": service.name, "config_data": configs[service.bot_profile_id]}
            services[service.bot_profile_id].append(entry)
        else:
            services[service.bot_profile_id].append(format_service(service))
    result: dict[int, dict[str, Any]] = {}
    for bot_id in bot_ids:
        d = defaults.get(bot_id)
        sending = d.default_sending_stream_id if d is not None else None
        events_register = d.default_events_register_stream_id if d is not None else None
        result[bot_id] = {
            "default_sending_stream": stream_names.get(sending) if sending is not None else None,
            "default_events_register_stream": (
                stream_names.get(events_register) if events_register is not None else None
            ),
            "default_all_public_streams": d.default_all_public_streams if d is not None else False,
            "services": services[bot_id],
        }
    return result


def bot_extra_fields(session: Session, bot: UserProfile) -> dict[str, Any]:
    """The fields of ``bots_extra_fields`` for one bot."""
    return bots_extra_fields(session, [bot])[bot.id]


def owned_bots(session: Session, user: Requester) -> list[UserProfile]:
    return list(
        session.scalars(
            select(UserProfile)
            .where(UserProfile.bot_owner_id == user.user_id, UserProfile.is_bot, UserProfile.is_active)
            .order_by(UserProfile.id)
        )
    )
