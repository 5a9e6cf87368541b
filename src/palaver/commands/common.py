"""What every subcommand shares: its error type, the global options, settings from them,
and finding the organization or user a command names."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Protocol

from sqlalchemy.orm import Session

from palaver.config import Settings, load_settings
from palaver.lib.realm import get_realm_by_string_id
from palaver.lib.users import get_user_by_delivery_email
from palaver.models import Realm, UserProfile

ROLE_NAMES = {"owner": 100, "administrator": 200, "admin": 200, "moderator": 300, "member": 400, "guest": 600}


class CliError(Exception):
    """A problem to report on one line of stderr."""


class AddCommand(Protocol):
    def __call__(
        self,
        name: str,
        func: Callable[[argparse.Namespace], None],
        help_text: str,
        aliases: Sequence[str] = (),
    ) -> argparse.ArgumentParser: ...


def common_options() -> argparse.ArgumentParser:
    """``--config``, ``--database-url`` and ``--data-dir``, for the top parser and every subcommand.

    SUPPRESS leaves an option out of the namespace unless given, so a value given before
    the subcommand is not overwritten by the subcommand's empty default.
    """
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--config", default=argparse.SUPPRESS, help="TOML configuration file (default: $PALAVER_CONFIG)"
    )
    parent.add_argument("--database-url", default=argparse.SUPPRESS, help="override the database URL")
    parent.add_argument("--data-dir", default=argparse.SUPPRESS, help="override the data directory")
    return parent


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides = {
        "host": getattr(args, "host", None),
        "port": getattr(args, "port", None),
        "workers": getattr(args, "workers", None),
        "database_url": getattr(args, "database_url", None),
        "data_dir": getattr(args, "data_dir", None),
    }
    return load_settings(config_file=getattr(args, "config", None), **overrides)


def role_arg(value: str) -> int:
    if value.isdigit() and int(value) in ROLE_NAMES.values():
        return int(value)
    if value.lower() in ROLE_NAMES:
        return ROLE_NAMES[value.lower()]
    raise argparse.ArgumentTypeError(
        f"invalid role {value!r} (owner, administrator, moderator, member, guest)"
    )


def require_realm(session: Session, string_id: str) -> Realm:
    realm = get_realm_by_string_id(session, string_id)
    if realm is None:
        raise CliError(f"no organization with string ID {string_id!r}")
    return realm


def require_user(session: Session, realm_string_id: str, email: str) -> UserProfile:
    realm = require_realm(session, realm_string_id)
    user = get_user_by_delivery_email(session, realm.id, email)
    if user is None:
        raise CliError(f"no user {email!r} in organization {realm_string_id!r}")
    return user
