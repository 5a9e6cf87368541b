"""palaver export, import and backup as an operator runs them."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

from palaver.portability import FORMAT_VERSION
from tests.test_cli import Cli, CliRealm


def test_export_then_import_under_another_string_id(cli: Cli, cli_realm: CliRealm, tmp_path: Path) -> None:
    sid = cli_realm.string_id
    cli.ok(f"create-user --realm {sid} --email ann@{sid}.example.com --full-name Ann --no-password")
    archive = tmp_path / "acme.zip"
    out = cli.ok(f"export {sid} {archive} --quiet")
    exported, secrets = out.splitlines()
    assert exported.startswith(f"Exported {sid!r}: 2 users, ") and exported.endswith("s")
    assert (
        secrets == "API keys, bot tokens, invitation links, sessions and second factors were left out"
        " (--include-secrets keeps them)"
    )
    # Every message and password hash of the organization: for its owner's eyes only.
    assert archive.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert manifest["format_version"] == FORMAT_VERSION
        assert manifest["realm"]["string_id"] == sid
        assert "tables/message.jsonl" in zf.namelist()
    assert cli.fails(f"export {sid} {archive}") == f"{archive} exists already (give --force to replace it)"
    cli.ok(f"export {sid} {archive} --force --quiet")

    assert cli.fails(f"import {archive} --quiet") == (
        f"an organization with string ID {sid!r} exists already (choose --string-id)"
    )
    out = cli.ok(f"import {archive} --string-id {sid}-2 --quiet")
    assert out.startswith(f"Imported '{sid}-2' (realm ID ")
    assert out.splitlines()[1:] == [
        f"It is served at http://{sid}-2.palaver.test",
        "The export held no credentials: everyone has a new API key, signs in again"
        " and enrols any second factor again",
    ]
    out = cli.ok(f"export {sid} {archive} --force --quiet --include-secrets")
    assert len(out.splitlines()) == 1
    out = cli.ok(f"import {archive} --string-id {sid}-3 --quiet")
    assert len(out.splitlines()) == 2
    rows = json.loads(cli.ok(f"list-users --realm {sid}-2 --json"))
    assert [r["email"] for r in rows] == [cli_realm.owner_email, f"ann@{sid}.example.com"]


def test_import_errors(cli: Cli, tmp_path: Path) -> None:
    assert cli.fails(f"import {tmp_path / 'none.zip'}") == f"{tmp_path / 'none.zip'} does not exist"
    bogus = tmp_path / "bogus.zip"
    with zipfile.ZipFile(bogus, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "palaver-realm-export", "format_version": 99}))
    assert cli.fails(f"import {bogus}") == (
        f"export format version 99 is not supported (this Palaver reads {FORMAT_VERSION})"
    )
    assert cli.fails("export nowhere x.zip") == "no organization with string ID 'nowhere'"


def test_backup(cli: Cli, cli_realm: CliRealm, tmp_path: Path) -> None:
    target = tmp_path / "backup.db"
    if not cli.database_url.startswith("sqlite"):
        assert cli.fails(f"backup {target}") == (
            "backup copies SQLite databases; for PostgreSQL use pg_dump (see README)"
        )
        return
    out = cli.ok(f"backup {target}")
    assert out.startswith("Backed up ") and f" to {target} (" in out
    with sqlite3.connect(target) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM realm WHERE string_id = ?", (cli_realm.string_id,)
        ).fetchone()
        assert count == 1
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert cli.fails(f"backup {target}") == f"{target} exists already (give --force to replace it)"
    # The copy is a working database: the CLI reads it.
    rows = json.loads(
        cli.raw(f"list-users --realm {cli_realm.string_id} --json --database-url sqlite:///{target}").out
    )
    assert rows[0]["email"] == cli_realm.owner_email
