"""``palaver export``, ``import`` and ``backup``."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import TextIO

import orjson

from palaver.commands.common import AddCommand, CliError, require_realm, settings_from_args


def cmd_export(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.portability.exporter import export_realm

    path = Path(args.file)
    if path.exists() and not args.force:
        raise CliError(f"{path} exists already (give --force to replace it)")
    with open_services(settings_from_args(args)) as services:
        with services.db.session() as session:
            realm_id = require_realm(session, args.realm).id
        if args.format == "zulip":
            from palaver.importers.zulip_export import export_zulip_realm

            status = _zulip_migration_status(args.zulip_migration_status)
            done = export_zulip_realm(services, realm_id, path, migration_status=status)
            print(
                f"Exported {args.realm!r} in Zulip's format: {done.counts['users']} users,"
                f" {done.counts['messages']} messages, {done.counts['files']} files"
                f" to {path} in {done.seconds:.1f}s (unpack it, then run Zulip's"
                " manage.py import SUBDOMAIN DIRECTORY)"
            )
            if status is None:
                print(ZULIP_MIGRATION_STATUS_HELP)
            if done.counts.get("scheduled_messages_without_recipient"):
                print(
                    f"left out: {done.counts['scheduled_messages_without_recipient']} scheduled messages"
                    " to a group that never exchanged a message (Zulip's format has no recipient for it)"
                )
            return
        result = export_realm(
            services,
            realm_id,
            path,
            progress=None if args.quiet else _progress_stream(),
            include_secrets=args.include_secrets,
        )
    tables = result.manifest["tables"]
    print(
        f"Exported {args.realm!r}: {tables.get('user_profile', {}).get('rows', 0)} users,"
        f" {result.messages} messages, {result.manifest['uploads']['files']} files"
        f" to {path} in {result.seconds:.1f}s"
    )
    if not args.include_secrets:
        print(
            "API keys, bot tokens, invitation links, sessions and second factors were left out"
            " (--include-secrets keeps them)"
        )


ZULIP_MIGRATION_STATUS_HELP = (
    "no migration_status.json: Zulip's manage.py import refuses a directory without the"
    " target server's one. Write it on that server with\n"
    "  ./manage.py shell -c 'from zerver.lib.export import export_migration_status;"
    ' export_migration_status("/tmp")\'\n'
    "and give it here as --zulip-migration-status /tmp/migration_status.json"
    " (or copy it into the unpacked directory)"
)


def _zulip_migration_status(name: str | None) -> bytes | None:
    """The target Zulip server's migration_status.json, checked for the keys Zulip reads."""
    if name is None:
        return None
    try:
        data = Path(name).read_bytes()
        status = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError) as e:
        raise CliError(f"--zulip-migration-status: cannot read {name}: {e}") from e
    if not (
        isinstance(status, dict)
        and isinstance(status.get("zulip_version"), str)
        and isinstance(status.get("migrations_by_app"), dict)
    ):
        raise CliError(
            f"--zulip-migration-status: {name} is not a Zulip migration_status.json"
            " (zulip_version and migrations_by_app)"
        )
    return data


def cmd_import(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_url
    from palaver.models import Realm
    from palaver.portability.archive import ArchiveError
    from palaver.portability.importer import import_realm

    settings = settings_from_args(args)
    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"{path} does not exist")
    with open_services(settings) as services:
        try:
            result = import_realm(
                services,
                path,
                string_id=args.string_id,
                progress=None if args.quiet else _progress_stream(),
            )
        except ArchiveError as e:
            raise CliError(str(e)) from None
        with services.db.session() as session:
            realm = session.get(Realm, result.realm_id)
            assert realm is not None
            url = realm_url(settings, realm)
    messages = result.manifest["tables"].get("message", {}).get("rows", 0)
    print(
        f"Imported {result.string_id!r} (realm ID {result.realm_id}, {messages} messages)"
        f" in {result.seconds:.1f}s"
    )
    print(f"It is served at {url}")
    if not result.manifest.get("secrets"):
        print(
            "The export held no credentials: everyone has a new API key, signs in again"
            " and enrols any second factor again"
        )


def cmd_backup(args: argparse.Namespace) -> None:
    settings = settings_from_args(args)
    if not settings.is_sqlite:
        raise CliError("backup copies SQLite databases; for PostgreSQL use pg_dump (see README)")
    source = Path(settings.database_url.removeprefix("sqlite:///"))
    if not source.is_file():
        raise CliError(f"no database at {source}")
    target = Path(args.file)
    if target.exists() and not args.force:
        raise CliError(f"{target} exists already (give --force to replace it)")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    # SQLite's online backup copies a consistent snapshot while the server keeps writing:
    # a few pages at a time, restarting if a writer changes pages already copied.
    src = sqlite3.connect(source)
    try:
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst, pages=4096)
        finally:
            dst.close()
    finally:
        src.close()
    partial.replace(target)
    print(f"Backed up {source} to {target} ({target.stat().st_size:,} bytes)")


def _progress_stream() -> TextIO | None:
    return sys.stderr if sys.stderr.isatty() else None


def register(add: AddCommand) -> None:
    export = add("export", cmd_export, "export an organization to a zip archive")
    export.add_argument("realm", metavar="REALM", help='organization string ID ("" for the root domain)')
    export.add_argument("file", metavar="FILE", help="archive to write")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    export.add_argument(
        "--format",
        choices=("palaver", "zulip"),
        default="palaver",
        help="palaver (a zip for palaver import) or zulip (a tarball for Zulip's manage.py import)",
    )
    export.add_argument(
        "--zulip-migration-status",
        metavar="JSON",
        help="with --format zulip: the target Zulip server's migration_status.json, which its"
        " manage.py import requires",
    )
    export.add_argument("--quiet", action="store_true", help="no progress bar")
    export.add_argument(
        "--include-secrets",
        action="store_true",
        help="keep API keys, tokens, sessions and second factors (a restore onto a trusted server)",
    )

    imp = add("import", cmd_import, "import an organization from an export archive")
    imp.add_argument("file", metavar="FILE", help="archive written by palaver export")
    imp.add_argument("--string-id", help="import under this string ID instead of the exported one")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")

    backup = add("backup", cmd_backup, "copy the SQLite database while the server runs")
    backup.add_argument("file", metavar="FILE", help="backup file to write")
    backup.add_argument("--force", action="store_true", help="replace FILE if it exists")
