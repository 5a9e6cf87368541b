"""The operator's account and organization commands, global options anywhere, serve's checks."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaver.services import Services
from tests.client import TestClient
from tests.helpers import EventRecorder
from tests.test_cli import (
    Cli,
    CliRealm,
    Result,
    api_key_from,
    basic,
    expect_clean_failure,
    fetch_api_key,
    get_me,
    new_string_id,
    users_by_email,
)


@pytest.fixture
def same_bus(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run on the test's services, so the ``events`` fixture sees what they send."""
    import palaver.bootstrap

    @contextlib.contextmanager
    def shared(settings: object) -> Iterator[Services]:
        yield services

    monkeypatch.setattr(palaver.bootstrap, "open_services", shared)


def make_user(cli: Cli, realm: CliRealm, name: str, *options: str) -> tuple[str, str]:
    email = f"{name}@{realm.string_id}.example.com"
    out = cli.ok(
        f"create-user --realm {realm.string_id} --email {email} --full-name {name} {' '.join(options)}"
    )
    return email, api_key_from(out.splitlines()[1])


# Passwords ---------------------------------------------------------------------------------


def test_password_file_and_stdin(
    cli: Cli, cli_realm: CliRealm, client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "pw.txt"
    secret.write_text("from-a-file\nignored second line\n")
    email, _ = make_user(cli, cli_realm, "filed", f"--password-file {secret}")
    assert fetch_api_key(client, cli_realm, email, "from-a-file").json()["result"] == "success"

    monkeypatch.setattr(sys, "stdin", io.StringIO("from-stdin\n"))
    email, _ = make_user(cli, cli_realm, "piped", "--password-stdin")
    assert fetch_api_key(client, cli_realm, email, "from-stdin").json()["result"] == "success"

    monkeypatch.setattr(sys, "stdin", io.StringIO("reset-by-pipe\n"))
    out = cli.ok(f"reset-password --realm {cli_realm.string_id} --email {email} --password-stdin")
    assert out == f"Password changed for {email}\n"
    assert fetch_api_key(client, cli_realm, email, "reset-by-pipe").json()["result"] == "success"


def test_password_option_errors(cli: Cli, cli_realm: CliRealm, tmp_path: Path) -> None:
    sid = cli_realm.string_id
    base = f"create-user --realm {sid} --email x@{sid}.example.com --full-name X"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert cli.fails(f"{base} --password-file {empty}") == "password cannot be empty"
    assert cli.fails(f"{base} --password-file {tmp_path / 'missing'}").startswith("No such file or directory")
    assert cli.fails(f"{base} --password pw --no-password") == "give only one of --password, --no-password"
    assert cli.fails(f"{base} --password-stdin --password-file {empty}") == (
        "give only one of --password-file, --password-stdin"
    )
    # reset-password has no --no-password: removing a password is not a reset.
    result = cli(f"reset-password --realm {sid} --email {cli_realm.owner_email} --no-password")
    assert result.code == 2 and "unrecognized arguments: --no-password" in result.err
    assert set(users_by_email(cli, cli_realm)) == {cli_realm.owner_email}


# Accounts ----------------------------------------------------------------------------------


def test_deactivate_and_reactivate_user(
    cli: Cli, cli_realm: CliRealm, client: TestClient, events: EventRecorder, same_bus: None
) -> None:
    sid = cli_realm.string_id
    email, key = make_user(cli, cli_realm, "leaver", "--no-password")
    events.clear()
    assert cli.ok(f"deactivate-user --realm {sid} --email {email}").startswith(
        f"Deactivated {email} (user ID "
    )
    me = get_me(client, cli_realm, email, key)
    assert me.status_code == 401 and me.json()["code"] == "USER_DEACTIVATED"
    assert [e["person"]["is_active"] for e, _ in events.of_type("realm_user")] == [False]
    assert users_by_email(cli, cli_realm)[email]["is_active"] is False
    assert cli.fails(f"deactivate-user --realm {sid} --email {email}") == "User is already deactivated"

    assert cli.ok(f"reactivate-user --realm {sid} --email {email}").startswith(f"Reactivated {email}")
    assert get_me(client, cli_realm, email, key).json()["result"] == "success"
    assert cli.fails(f"reactivate-user --realm {sid} --email {email}") == "User is already active"
    assert cli.fails(f"deactivate-user --realm {sid} --email {cli_realm.owner_email}") == (
        "Cannot deactivate the only organization owner"
    )


def test_change_role(
    cli: Cli, cli_realm: CliRealm, client: TestClient, events: EventRecorder, same_bus: None
) -> None:
    sid = cli_realm.string_id
    email, key = make_user(cli, cli_realm, "climber", "--no-password")
    events.clear()
    assert (
        cli.ok(f"change-role --realm {sid} --email {email} --role admin") == f"{email} is now administrator\n"
    )
    assert get_me(client, cli_realm, email, key).json()["role"] == 200
    assert [e["person"]["role"] for e, _ in events.of_type("realm_user")] == [200]
    cli.ok(f"change-role --realm {sid} --email {email} --role owner")
    assert get_me(client, cli_realm, email, key).json()["is_owner"] is True
    # With two owners the first may step down; the last one may not.
    cli.ok(f"change-role --realm {sid} --email {cli_realm.owner_email} --role member")
    assert cli.fails(f"change-role --realm {sid} --email {email} --role guest") == (
        "The owner permission cannot be removed from the only organization owner."
    )
    result = cli(f"change-role --realm {sid} --email {email} --role king")
    assert result.code == 2 and "argument --role: invalid role" in result.err


def test_change_email(
    cli: Cli, cli_realm: CliRealm, client: TestClient, events: EventRecorder, same_bus: None
) -> None:
    sid = cli_realm.string_id
    email, key = make_user(cli, cli_realm, "mover", "--no-password")
    other, _ = make_user(cli, cli_realm, "stayer", "--no-password")
    new = f"moved@{sid}.example.com"
    events.clear()
    assert cli.ok(f"change-email --realm {sid} --email {email} --new-email {new}") == (
        f"Email changed from {email} to {new}\n"
    )
    assert get_me(client, cli_realm, new, key).json()["delivery_email"] == new
    changes = [e["person"] for e, _ in events.of_type("realm_user")]
    assert changes and all(c.get("delivery_email") == new for c in changes if "delivery_email" in c)
    assert cli.fails(f"change-email --realm {sid} --email {new} --new-email {other.upper()}") == (
        "Email is already in use."
    )
    assert cli.fails(f"change-email --realm {sid} --email {new} --new-email nope") == "Invalid email 'nope'"
    assert cli.fails(f"change-email --realm {sid} --email {email} --new-email x@example.com") == (
        f"no user {email!r} in organization {sid!r}"
    )


def test_regenerate_api_key_for_a_user(cli: Cli, cli_realm: CliRealm, client: TestClient) -> None:
    email, key = make_user(cli, cli_realm, "rekeyed", "--no-password")
    new = cli.ok(f"regenerate-api-key --realm {cli_realm.string_id} --email {email}").strip()
    assert new != key
    assert get_me(client, cli_realm, email, new).json()["result"] == "success"


# Organizations -----------------------------------------------------------------------------


def test_list_realms(cli: Cli, cli_realm: CliRealm) -> None:
    make_user(cli, cli_realm, "someone", "--no-password")
    rows = json.loads(cli.ok("list-realms --json"))
    mine = next(r for r in rows if r["string_id"] == cli_realm.string_id)
    assert mine == {
        "realm_id": mine["realm_id"],
        "string_id": cli_realm.string_id,
        "name": "CLI Org",
        "url": f"http://{cli_realm.host}",
        "active_humans": 2,
        "is_active": True,
    }
    table = cli.ok("list-realms").splitlines()
    assert table[0].split() == ["ID", "STRING", "ID", "USERS", "ACTIVE", "URL", "NAME"]
    line = next(line for line in table if f" {cli_realm.string_id} " in line)
    assert line.split()[2:5] == ["2", "yes", f"http://{cli_realm.host}"]


def test_deactivate_and_reactivate_realm(
    cli: Cli, cli_realm: CliRealm, client: TestClient, events: EventRecorder, same_bus: None
) -> None:
    sid = cli_realm.string_id
    events.clear()
    assert cli.ok(f"deactivate-realm --realm {sid}") == f"Deactivated organization 'CLI Org' ({sid!r})\n"
    me = get_me(client, cli_realm, cli_realm.owner_email, cli_realm.owner_api_key)
    assert me.status_code == 401 and me.json()["code"] == "REALM_DEACTIVATED"
    ((event, users),) = events.of_type("realm")
    assert event == {"type": "realm", "op": "deactivated", "realm_id": event["realm_id"]}
    assert len(users) == 1  # the owner, the only user
    assert cli.fails(f"deactivate-realm --realm {sid}") == "Organization is already deactivated"
    rows = json.loads(cli.ok("list-realms --json"))
    assert next(r for r in rows if r["string_id"] == sid)["is_active"] is False

    cli.ok(f"reactivate-realm --realm {sid}")
    assert (
        get_me(client, cli_realm, cli_realm.owner_email, cli_realm.owner_api_key).json()["result"]
        == "success"
    )
    assert cli.fails(f"reactivate-realm --realm {sid}") == "Organization is already active"
    assert cli.fails("deactivate-realm --realm nowhere") == "no organization with string ID 'nowhere'"


# Global options, help ----------------------------------------------------------------------


def test_global_options_before_or_after_the_subcommand(cli: Cli, cli_realm: CliRealm, tmp_path: Path) -> None:
    config = tmp_path / "palaver.toml"
    config.write_text(f'database_url = "{cli.database_url}"\n')
    sid = cli_realm.string_id
    after = cli.raw(f"list-users --realm {sid} --json --config {config}")
    before = cli.raw(f"--config {config} list-users --realm {sid} --json")
    assert after.code == before.code == 0, (after, before)
    assert after.out == before.out
    assert json.loads(after.out)[0]["email"] == cli_realm.owner_email
    db_before = cli.raw(f"--database-url {cli.database_url} list-users --realm {sid} --json")
    assert db_before.out == after.out
    # Given after the subcommand, it wins over the one before it, as the later option.
    bad = cli.raw(f"--config {config} list-users --realm {sid} --config {tmp_path / 'none.toml'}")
    assert expect_clean_failure(bad) == f"configuration file {tmp_path / 'none.toml'} does not exist"


@pytest.mark.parametrize(
    "command",
    [
        "list-realms",
        "list-users",
        "create-user",
        "deactivate-user",
        "reactivate-user",
        "change-role",
        "reset-password",
        "change-password",
        "regenerate-api-key",
        "change-email",
        "deactivate-realm",
        "reactivate-realm",
    ],
)
def test_every_command_has_help(cli: Cli, command: str) -> None:
    result = cli.raw(f"{command} --help")
    assert result.code == 0
    name = "reset-password" if command == "change-password" else command  # an alias
    assert result.out.startswith(f"usage: palaver {name}")
    assert "--config" in result.out and "--database-url" in result.out


# serve's start-up checks -------------------------------------------------------------------


def test_serve_refuses_a_busy_port_before_migrating(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = Cli(capsys, "").raw(f"serve --port {port}")
    assert expect_clean_failure(result) == (
        f"port {port} on 127.0.0.1 is already in use (another Palaver running?); choose another with --port"
    )
    assert not (cli_env / "palaver.db").exists()  # nothing ran before the check


def test_startup_line_names_the_url_once(tmp_path: Path) -> None:
    from palaver.bootstrap import prepare_for_serving
    from palaver.config import load_settings

    out = io.StringIO()
    settings = load_settings(env={}, data_dir=tmp_path, create_demo_realm=False, password_time_cost=1)
    prepare_for_serving(settings, out)
    assert out.getvalue() == (
        "Palaver is serving on http://127.0.0.1:9991\n"
        "Web client: open http://127.0.0.1:9991/ in a browser and log in.\n"
    )
    out = io.StringIO()
    settings = load_settings(env={}, data_dir=tmp_path, create_demo_realm=False, host="0.0.0.0", port=80)
    prepare_for_serving(settings, out)
    assert out.getvalue() == (
        "Palaver is serving on http://localhost:80 (listening on 0.0.0.0:80)\n"
        "Web client: open http://localhost:80/ in a browser and log in.\n"
    )


def test_created_realm_address_opens(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Default settings: the realm's address is a *.localhost name, which routes to the realm.
    monkeypatch.delenv("PALAVER_EXTERNAL_URL")
    result: Result = Cli(capsys, "").raw(
        f"create-realm --name Acme --string-id acme --owner-email b@acme.test --owner-name B --password pw"
        f" --data-dir {cli_env / 'own'}"
    )
    assert result.code == 0, result
    assert result.out.startswith("Created organization 'Acme' at http://acme.localhost:9991\n")


def test_realm_reached_by_localhost_subdomain(tmp_path: Path) -> None:
    from palaver.config import load_settings
    from palaver.lib.realm import subdomain_for_host

    settings = load_settings(env={}, data_dir=tmp_path)
    assert subdomain_for_host(settings, "acme.localhost:9991") == "acme"
    assert subdomain_for_host(settings, "localhost:9991") == ""
    assert subdomain_for_host(settings, "127.0.0.1:9991") == ""
    assert basic("a", "b")  # keeps the shared helper import honest
    assert new_string_id() != new_string_id()
