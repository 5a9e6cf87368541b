"""The ``palaver`` command: serve, migrate, and the operator's account tasks."""

from __future__ import annotations

import argparse
import functools
import getpass
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from palaver.commands import (
    accounts,
    admin,
    directory,
    doctor,
    importers,
    mail,
    portability,
    push,
    realms,
    retention,
)
from palaver.commands.common import (
    ROLE_NAMES,
    CliError,
    common_options,
    require_realm,
    require_user,
    role_arg,
    settings_from_args,
)
from palaver.commands.passwords import add_password_options, explicit_password
from palaver.config import ConfigError
from palaver.lib.exceptions import JsonableError
from palaver.models import Realm, UserProfile


def _fail(message: str) -> NoReturn:
    print(f"palaver: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _password(args: argparse.Namespace) -> str | None:
    given = explicit_password(args)
    if given is not None:
        return given
    if getattr(args, "no_password", False):
        return None
    if args.password is not None:
        # The prompt refuses an empty password; `--password ""` (often an unset shell
        # variable) must not quietly create an account nobody can log in to.
        if not args.password:
            raise CliError("password cannot be empty")
        return str(args.password)
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Password (again): "):
            raise CliError("passwords do not match")
        if not first:
            raise CliError("password cannot be empty")
        return first
    # Off a terminal a password must be given explicitly (or explicitly refused with
    # --no-password): a script that forgot it must not create an account nobody can use.
    options = "--password-file FILE or --password-stdin"
    if hasattr(args, "no_password"):
        options = "--password-file FILE, --password-stdin or --no-password"
    raise CliError(f"not a terminal, so no password prompt: give {options}")


# Commands --------------------------------------------------------------------------------


def cmd_migrate(args: argparse.Namespace) -> None:
    from palaver.bootstrap import migrate_database

    settings = settings_from_args(args)
    migrate_database(settings)
    print("Database is up to date.")


def cmd_serve(args: argparse.Namespace) -> None:
    from palaver.bootstrap import prepare_for_serving, run_server

    settings = settings_from_args(args)
    if settings.workers > 1 and not settings.redis_url:
        raise CliError("--workers above 1 needs a Redis URL (PALAVER_REDIS_URL): events must cross processes")
    from palaver.commands.ports import ensure_port_free

    ensure_port_free(settings)
    prepare_for_serving(settings, out=sys.stdout)
    run_server(settings, config_file=getattr(args, "config", None))


def cmd_create_realm(args: argparse.Namespace) -> None:
    from palaver.actions.realm import do_create_realm
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_email_host, realm_url

    settings = settings_from_args(args)
    password = _password(args)
    with open_services(settings) as services, services.db.session() as session:
        probe = Realm(string_id=args.string_id, name=args.name)
        realm, owner = do_create_realm(
            session,
            string_id=args.string_id,
            name=args.name,
            owner_email=args.owner_email,
            owner_full_name=args.owner_name,
            owner_password_hash=services.passwords.hash(password) if password else None,
            email_host=realm_email_host(settings, probe),
        )
        print(f"Created organization {realm.name!r} at {realm_url(settings, realm)}")
        print(f"Owner: {owner.delivery_email} (user ID {owner.id}), API key {owner.api_key}")


def cmd_create_user(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_create_user
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_email_host
    from palaver.lib.users import get_user_by_delivery_email

    settings = settings_from_args(args)
    is_bot = args.bot_type is not None
    if is_bot and args.bot_owner is None:
        raise CliError("--bot-owner is required for a bot")
    if not is_bot and args.bot_owner is not None:
        raise CliError("--bot-owner is only for bots (give --bot-type)")
    if is_bot and (args.password is not None or args.password_file or args.password_stdin):
        # Bots authenticate with their API key only; a password would be silently dropped.
        raise CliError("bots have no password; they log in with their API key")
    password = None if is_bot else _password(args)
    with open_services(settings) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        owner = None
        if args.bot_owner is not None:
            owner = get_user_by_delivery_email(session, realm.id, args.bot_owner)
            if owner is None or owner.is_bot:
                raise CliError(f"no user {args.bot_owner!r} in organization {args.realm!r} to own the bot")
        user = do_create_user(
            session,
            realm,
            email=args.email,
            full_name=args.full_name,
            password_hash=services.passwords.hash(password) if password else None,
            email_host=realm_email_host(settings, realm),
            role=args.role,
            bot_type=args.bot_type,
            bot_owner_id=owner.id if owner is not None else None,
        )
        print(f"Created {'bot' if is_bot else 'user'} {user.delivery_email} (user ID {user.id})")
        print(f"API key: {user.api_key}")


def cmd_change_password(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_change_password
    from palaver.bootstrap import open_services

    settings = settings_from_args(args)
    password = _password(args)
    assert password is not None
    with open_services(settings) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        do_change_password(session, user, services.passwords.hash(password))
        print(f"Password changed for {args.email}")


def cmd_regenerate_api_key(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_regenerate_api_key
    from palaver.bootstrap import open_services

    settings = settings_from_args(args)
    with open_services(settings) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        print(do_regenerate_api_key(session, user))


def cmd_list_users(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services

    settings = settings_from_args(args)
    with open_services(settings) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        users = session.scalars(
            select(UserProfile).where(UserProfile.realm_id == realm.id).order_by(UserProfile.id)
        ).all()
        rows = [
            {
                "user_id": u.id,
                "email": u.delivery_email,
                "full_name": u.full_name,
                "role": next(k for k, v in ROLE_NAMES.items() if v == u.role),
                "is_bot": u.is_bot,
                "is_active": u.is_active,
            }
            for u in users
        ]
        if args.json:
            print(json.dumps(rows, indent=2))
            return
        print(f"{'ID':>5}  {'EMAIL':<36} {'ROLE':<14} {'ACTIVE':<6} NAME")
        for r in rows:
            kind = f"{r['role']}{' bot' if r['is_bot'] else ''}"
            active = "yes" if r["is_active"] else "no"
            print(f"{r['user_id']:>5}  {r['email']:<36} {kind:<14} {active:<6} {r['full_name']}")


# Parser ----------------------------------------------------------------------------------


def cmd_seed_messages(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.seed import SeedPlan, seed_messages

    if args.messages < 0 or args.subscribers < 2 or args.channels < 1 or args.topics < 1:
        raise CliError("--messages must be >= 0, --subscribers >= 2, --channels and --topics >= 1")
    plan = SeedPlan(
        messages=args.messages,
        channels=args.channels,
        topics_per_channel=args.topics,
        subscribers=args.subscribers,
        dm_share=args.dm_share,
        batch_size=args.batch_size,
    )
    with open_services(settings_from_args(args)) as services:
        with services.db.session() as session:
            realm_id = require_realm(session, args.realm).id
        result = seed_messages(services, realm_id, plan, progress=None if args.quiet else sys.stderr)
    print(
        f"Seeded {result.messages} messages (IDs {result.first_id}-{result.last_id}) and "
        f"{result.user_messages} user_message rows in {result.seconds:.1f}s"
    )


def cmd_seed_users(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.seed import seed_users

    if args.users < 0 or args.channels < 0 or args.subscriptions < 0:
        raise CliError("--users, --channels and --subscriptions must be >= 0")
    with open_services(settings_from_args(args)) as services:
        with services.db.session() as session:
            realm_id = require_realm(session, args.realm).id
        result = seed_users(
            services,
            realm_id,
            users=args.users,
            channels=args.channels,
            subscriptions_per_user=args.subscriptions,
        )
    print(
        f"Seeded {result.users} users and {result.subscriptions} subscriptions "
        f"({result.channels} channels) in {result.seconds:.1f}s"
    )


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The one parser of a process: parsing leaves it unchanged, and its subcommands keep
    the functions they had when it was built. Built once because about fifty subcommand
    parsers cost tens of milliseconds, which every in-process ``main`` (the CLI tests run
    hundreds) paid again."""
    # The global options are accepted before and after the subcommand alike.
    parser = argparse.ArgumentParser(
        prog="palaver", description="Palaver team chat server", parents=[common_options()]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, func: Callable[[argparse.Namespace], None], help_text: str, aliases: Sequence[str] = ()
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name, help=help_text, description=help_text, parents=[common_options()], aliases=list(aliases)
        )
        p.set_defaults(func=func)
        return p

    serve = add("serve", cmd_serve, "run the server (migrates, and creates a demo organization if empty)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 9991)")
    serve.add_argument("--workers", type=int, help="worker processes (more than 1 needs Redis)")

    add("migrate", cmd_migrate, "apply database migrations")

    realm = add("create-realm", cmd_create_realm, "create an organization and its owner")
    realm.add_argument("--name", required=True, help="organization name")
    realm.add_argument("--string-id", required=True, help="subdomain; empty for the root domain")
    realm.add_argument("--owner-email", required=True)
    realm.add_argument("--owner-name", required=True, help="owner's full name")
    realm.add_argument("--password", help="owner's password (prompted for in a terminal)")
    add_password_options(realm, allow_none=False)

    user = add("create-user", cmd_create_user, "create a user or bot")
    user.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    user.add_argument("--email", required=True)
    user.add_argument("--full-name", required=True)
    user.add_argument(
        "--role", type=role_arg, default=400, help="owner, administrator, moderator, member, guest"
    )
    user.add_argument("--bot-type", type=int, choices=[1, 2, 3, 4], help="make a bot of this type")
    user.add_argument("--bot-owner", help="email of the bot's owner")
    user.add_argument("--password", help="password (prompted for in a terminal; none for bots)")
    add_password_options(user, allow_none=True)

    pw = add("reset-password", cmd_change_password, "set a user's password", aliases=["change-password"])
    pw.add_argument("--realm", default="")
    pw.add_argument("--email", required=True)
    pw.add_argument("--password", help="new password (prompted for in a terminal)")
    add_password_options(pw, allow_none=False)

    key = add("regenerate-api-key", cmd_regenerate_api_key, "replace a user's API key and print it")
    key.add_argument("--realm", default="")
    key.add_argument("--email", required=True)

    ls = add("list-users", cmd_list_users, "list an organization's users")
    ls.add_argument("--realm", default="")
    ls.add_argument("--json", action="store_true", help="print JSON")

    seed = add("seed-messages", cmd_seed_messages, "fill an organization with messages in bulk (benchmarks)")
    seed.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    seed.add_argument("--messages", type=int, default=1_000_000, help="how many (default 1,000,000)")
    seed.add_argument("--channels", type=int, default=10, help="channels to spread them over (default 10)")
    seed.add_argument("--topics", type=int, default=20, help="topics per channel (default 20)")
    seed.add_argument(
        "--subscribers", type=int, default=10, help="users receiving each channel message (default 10)"
    )
    seed.add_argument("--dm-share", type=float, default=0.1, help="share of direct messages (default 0.1)")
    seed.add_argument("--batch-size", type=int, default=5_000, help="messages per insert batch")
    seed.add_argument("--quiet", action="store_true", help="no progress bar")

    users = add(
        "seed-users", cmd_seed_users, "fill an organization with users and channels in bulk (benchmarks)"
    )
    users.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    users.add_argument("--users", type=int, default=10_000, help="seeded members (default 10,000)")
    users.add_argument("--channels", type=int, default=1_000, help="seeded channels (default 1,000)")
    users.add_argument(
        "--subscriptions", type=int, default=10, help="channels each seeded member joins (default 10)"
    )
    for module in (mail, admin, accounts, directory, realms, portability, retention, importers, push, doctor):
        module.register(add)
    return parser


def _database_error(error: SQLAlchemyError) -> str:
    # The driver's message leads; SQLAlchemy appends SQL and a help link on further lines.
    original = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    return f"database error: {lines[0] if lines else type(original).__name__}"


def main(argv: Sequence[str] | None = None) -> None:
    try:
        # Inside the handlers: `--help` writes too.
        args = build_parser().parse_args(argv)
        args.func(args)
        # Buffered output is written here, inside the handler below, not at exit.
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`palaver outbox | head`): nothing more to say to anyone.
        # Python would flush stdout again at exit and report the same closed pipe, so point
        # it at /dev/null first; 141 is what a shell reports for a SIGPIPE death.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141) from None
    except (ConfigError, CliError, JsonableError) as e:
        _fail(" ".join(str(e).split()))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except SQLAlchemyError as e:
        # An unreachable server, a missing database or an unwritable SQLite file is an
        # operator's problem to read in one line, not a traceback.
        _fail(_database_error(e))
    except OSError as e:
        _fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))


if __name__ == "__main__":
    main()
