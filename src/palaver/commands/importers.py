"""``palaver import-from SOURCE PATH``: a new organization from another chat system's export;
``palaver send-account-emails``: invite the people of an imported one to claim their accounts;
``palaver audit-log``: the organization's audit log, where an import is recorded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from palaver.commands.common import AddCommand, CliError, require_realm, settings_from_args

SOURCES = ("slack", "mattermost", "rocketchat", "zulip")


def cmd_import_from(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.importers.bundle import Bundle
    from palaver.importers.dry_run import dry_run
    from palaver.importers.fetch import Downloader
    from palaver.importers.model import ImportInputError
    from palaver.importers.read import read_export
    from palaver.importers.writer import write_organization
    from palaver.lib.realm import realm_url
    from palaver.models import Realm

    path = Path(args.path)
    progress = None if args.quiet or not sys.stderr.isatty() else sys.stderr
    downloader = Downloader(token=args.token, base_url=args.files_base_url)
    try:
        with Bundle(path) as bundle:
            source = read_export(args.source, bundle, downloader, team=args.team)
            if args.dry_run:
                summary = dry_run(source)
                print(f"Dry run: {args.source} export {path} would import as {args.string_id!r}:")
                for line in summary.lines(source.report):
                    print(f"  {line}")
                return
            settings = settings_from_args(args)
            with open_services(settings) as services:
                summary = write_organization(
                    services, source, string_id=args.string_id, name=args.name, progress=progress
                )
                with services.db.session() as session:
                    realm = session.get(Realm, summary.realm_id)
                    assert realm is not None
                    url = realm_url(settings, realm)
    except ImportInputError as e:
        raise CliError(f"{e} (nothing was imported)") from None
    print(f"Imported {args.source} export {path} as {args.string_id!r} (realm ID {summary.realm_id})")
    print(f"in {summary.seconds:.1f}s:")
    for line in summary.lines(source.report):
        print(f"  {line}")
    print(f"It is served at {url}")
    print(f"Invite people to claim their accounts: palaver send-account-emails --realm {args.string_id}")


def cmd_send_account_emails(args: argparse.Namespace) -> None:
    from sqlalchemy import select

    from palaver.actions.account_emails import do_request_password_reset
    from palaver.bootstrap import open_services
    from palaver.models import UserProfile

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        emails = list(
            session.scalars(
                select(UserProfile.delivery_email)
                .where(UserProfile.realm_id == realm.id, UserProfile.is_active, UserProfile.is_bot.is_(False))
                .order_by(UserProfile.id)
            )
        )
        if args.dry_run:
            for email in emails:
                print(email)
            print(f"{len(emails)} people would be emailed")
            return
        for email in emails:
            do_request_password_reset(session, realm, email)
    print(f"Queued a set-your-password email to {len(emails)} people of {args.realm!r}")


def cmd_audit_log(args: argparse.Namespace) -> None:
    import orjson

    from palaver.bootstrap import open_services
    from palaver.lib.realm_audit_log import realm_audit_log

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        entries = realm_audit_log(session, realm.id, limit=args.limit)
    for entry in entries:
        if args.json:
            row = {
                "id": entry.id,
                "event_type": entry.event_type,
                "event_time": entry.event_time.isoformat() + "Z",
                "acting_user_id": entry.acting_user_id,
                "extra_data": entry.extra_data,
            }
            print(orjson.dumps(row).decode())
        else:
            actor = "-" if entry.acting_user_id is None else f"user {entry.acting_user_id}"
            extra = orjson.dumps(entry.extra_data).decode()
            print(f"{entry.event_time:%Y-%m-%d %H:%M:%S} {entry.event_name} {actor} {extra}")


def register(add: AddCommand) -> None:
    imp = add(
        "import-from",
        cmd_import_from,
        "create an organization from a Slack, Mattermost, Rocket.Chat or Zulip export",
    )
    imp.add_argument("source", metavar="SOURCE", choices=SOURCES, help=" or ".join(SOURCES))
    imp.add_argument("path", metavar="PATH", help="the export: zip, tarball or directory")
    imp.add_argument("--string-id", required=True, help="the new organization's string ID")
    imp.add_argument("--name", help="the organization's name (default: from the export)")
    imp.add_argument(
        "--dry-run", action="store_true", help="read and check everything, print the summary, write nothing"
    )
    imp.add_argument("--token", help="API token sent with file downloads (Slack: a token with files:read)")
    imp.add_argument(
        "--files-base-url",
        help="fetch the export's file URLs from this scheme://host[/prefix] instead (a mirror)",
    )
    imp.add_argument("--team", help="Mattermost: the team to import (one organization per team)")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")

    mail = add(
        "send-account-emails",
        cmd_send_account_emails,
        "email every active person of an organization a link to set their password",
    )
    mail.add_argument("--realm", required=True, help="organization string ID")
    mail.add_argument("--dry-run", action="store_true", help="list who would be emailed")

    log = add("audit-log", cmd_audit_log, "list an organization's audit log, newest first (imports among it)")
    log.add_argument("--realm", required=True, help="organization string ID")
    log.add_argument("--limit", type=int, default=100, help="at most this many entries (default 100)")
    log.add_argument("--json", action="store_true", help="one JSON object a line")
