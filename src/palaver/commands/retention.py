"""``palaver retention run`` and ``palaver retention restore``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from palaver.commands.common import AddCommand, CliError, common_options, require_realm, settings_from_args
from palaver.timeutil import utcnow


def _date(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid date {value!r} (use YYYY-MM-DD or an ISO 8601 time)"
        ) from None
    # Stored times are naive UTC.
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def cmd_retention_run(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.workers.retention import run_retention

    with open_services(settings_from_args(args)) as services:
        if args.realm is not None:
            with services.db.session() as session:
                require_realm(session, args.realm)
        report = run_retention(services, utcnow(), realm_string_id=args.realm)
    for string_id, count in report.archived.items():
        print(f"{string_id or '(root)'}: archived {count} messages")
    print(f"Archived {report.total} messages; purged {report.purged_batches} old archive batches")


def cmd_retention_restore(args: argparse.Namespace) -> None:
    from palaver.actions.retention import do_restore_archive
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        outcome = do_restore_archive(session, realm, args.since, utcnow())
    if not outcome.transactions:
        raise CliError(
            "nothing archived to restore" + (f" since {args.since:%Y-%m-%d %H:%M}" if args.since else "")
        )
    print(f"Restored {outcome.messages} messages from {outcome.transactions} archive batches")


def register(add: AddCommand) -> None:
    retention = add("retention", _usage, "archive expired messages now, or restore archived ones")
    sub = retention.add_subparsers(dest="retention_command", required=True, metavar="ACTION")
    run = sub.add_parser(
        "run",
        parents=[common_options()],
        help="archive messages past their retention period now, and purge old archives",
        description="archive messages past their retention period now, and purge old archives",
    )
    run.add_argument("--realm", help="only this organization (string ID)")
    run.set_defaults(func=cmd_retention_run)
    restore = sub.add_parser(
        "restore",
        parents=[common_options()],
        help="restore archived messages of an organization",
        description="restore archived messages of an organization (archived since --since, or all)",
    )
    restore.add_argument("--realm", required=True, help="organization string ID")
    restore.add_argument("--since", type=_date, help="only messages archived at or after this date (UTC)")
    restore.set_defaults(func=cmd_retention_restore)


def _usage(args: argparse.Namespace) -> None:
    # Never reached: argparse requires an action, whose own func replaces this one.
    raise CliError("choose an action: run or restore")
