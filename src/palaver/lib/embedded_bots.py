"""Embedded bots: which ``zulip_bots`` bots this server runs, and their configuration.

Only bots that need no network and no outside account are offered: they run inside the
server process (``workers/embedded_bots.py``), on the service-bot worker's thread.
"""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.service_bots import BotConfigData

EMBEDDED_BOT_NAMES = ("converter", "encrypt", "followup", "helloworld", "incrementor", "virtual_fs")
MAX_CONFIG_KEY_LENGTH = 100

# A leading mention of the bot: @**Name**, @**Name|12**, or the silent @_**Name**.
_LEADING_MENTION = re.compile(r"^@_?\*\*(?P<name>[^*|]+)(?:\|(?P<id>\d+))?\*\*")


def _bot_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec("zulip_bots.bots")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / name


@cache
def config_template(name: str) -> dict[str, str]:
    """The bot's configuration keys with their example values (its ``.conf`` file)."""
    directory = _bot_dir(name)
    if directory is None:
        return {}
    for conf in sorted(directory.glob("*.conf")):
        parser = configparser.ConfigParser()
        parser.read(conf)
        values: dict[str, str] = {}
        for section in parser.sections():
            values.update(dict(parser.items(section)))
        return values
    return {}


def available_embedded_bots() -> list[dict[str, Any]]:
    """``realm_embedded_bots`` of /register: installed bots with their configuration keys."""
    if _bot_dir("helloworld") is None:
        return []  # zulip_bots is not installed
    return [{"name": name, "config": config_template(name)} for name in EMBEDDED_BOT_NAMES]


def check_embedded_bot(
    service_name: str | None, config_data: dict[str, str] | None
) -> tuple[str, dict[str, str]]:
    if service_name not in EMBEDDED_BOT_NAMES or _bot_dir(service_name) is None:
        raise JsonableError("Invalid embedded bot name.")
    config = dict(config_data or {})
    for key, value in config.items():
        if not key or len(key) > MAX_CONFIG_KEY_LENGTH or not isinstance(value, str):
            raise JsonableError("Invalid config_data")
    return service_name, config


def load_handler(service_name: str) -> Any:
    """A new handler object of the named bot (its module's ``handler_class``)."""
    if service_name not in EMBEDDED_BOT_NAMES:
        raise JsonableError("Invalid embedded bot name.")
    module = importlib.import_module(f"zulip_bots.bots.{service_name}.{service_name}")
    return module.handler_class()


def bot_config(session: Session, bot_id: int) -> dict[str, str]:
    rows = session.execute(
        select(BotConfigData.key, BotConfigData.value)
        .where(BotConfigData.bot_profile_id == bot_id)
        .order_by(BotConfigData.key)
    )
    return {key: value for key, value in rows}


def strip_leading_mention(content: str, bot_id: int, bot_name: str) -> str:
    """What a bot should read of a message that starts by mentioning it."""
    match = _LEADING_MENTION.match(content)
    if match is not None and (match.group("id") == str(bot_id) or match.group("name") == bot_name):
        return content[match.end() :].lstrip()
    return content
