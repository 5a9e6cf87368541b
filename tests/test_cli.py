"""The ``palaver`` command, in-process (``main([...])``) and as a process of its own.

In-process runs use the test session's database (SQLite or PostgreSQL) and check their
effect through the app; process runs (forked, and the installed command itself twice) use a
fresh SQLite file of their own.
"""

from __future__ import annotations

import base64
import getpass
import io
import json
import os
import shlex
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from palaver.cli import main
from palaver.config import Settings
from palaver.models import UserProfile
from palaver.services import Services
from tests.client import TestClient
from tests.forked import run_forked
from tests.helpers import wait_for_change_log

# What the test settings (tests/conftest.py) serve realms under.
EXTERNAL_URL = "http://palaver.test"
FAST_HASHING = {"PALAVER_PASSWORD_TIME_COST": "1", "PALAVER_PASSWORD_MEMORY_COST_KIB": "8"}


def _without_palaver_settings(env: dict[str, str]) -> dict[str, str]:
    """The environment minus anything that would configure Palaver behind a test's back."""
    names = {f"PALAVER_{name.upper()}" for name in Settings.model_fields}
    names |= {"PALAVER_CONFIG", "PALAVER_SETTINGS_JSON", "DATABASE_URL", "REDIS_URL"}
    return {k: v for k, v in env.items() if k not in names}


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A clean configuration environment with cheap hashing; returns the data dir."""
    for name in set(os.environ) - set(_without_palaver_settings(dict(os.environ))):
        monkeypatch.delenv(name)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("PALAVER_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PALAVER_EXTERNAL_URL", EXTERNAL_URL)
    for name, value in FAST_HASHING.items():
        monkeypatch.setenv(name, value)
    # pytest's stand-in stdin is not a terminal either, but make that explicit.
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    return data_dir


@dataclass
class Result:
    code: int
    out: str
    err: str


class Cli:
    """Runs ``palaver`` in-process against the session database.

    Commands are written as shell command lines (``shlex`` rules) for readability.
    """

    def __init__(
        self, capsys: pytest.CaptureFixture[str], database_url: str, services: Services | None = None
    ) -> None:
        self.capsys = capsys
        self.database_url = database_url
        self.services = services

    def raw(self, line: str) -> Result:
        """Runs exactly this command line."""
        self.capsys.readouterr()
        try:
            main(shlex.split(line))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        captured = self.capsys.readouterr()
        # What it changed has reached the session's app, as it reaches a running server,
        # before the test goes on (and its events do not arrive in the middle of the next step).
        if self.services is not None:
            wait_for_change_log(self.services)
        return Result(code, captured.out, captured.err)

    def __call__(self, line: str) -> Result:
        """Runs a subcommand on the session database."""
        command, _, rest = line.partition(" ")
        return self.raw(f"{command} --database-url {shlex.quote(self.database_url)} {rest}")

    def ok(self, line: str) -> str:
        result = self(line)
        assert result.code == 0, result
        assert result.err == ""
        return result.out

    def fails(self, line: str) -> str:
        """Runs a subcommand that must fail cleanly; returns its one-line message."""
        return expect_clean_failure(self(line))


def expect_clean_failure(result: Result) -> str:
    assert result.code == 1, result
    assert result.out == ""
    assert result.err.endswith("\n") and result.err.count("\n") == 1, result.err
    assert result.err.startswith("palaver: error: "), result.err
    assert "Traceback" not in result.err
    return result.err.removeprefix("palaver: error: ").rstrip("\n")


@pytest.fixture
def cli(cli_env: Path, capsys: pytest.CaptureFixture[str], database_url: str, services: Services) -> Cli:
    # `services` has migrated the session database already.
    return Cli(capsys, database_url, services)


@dataclass
class CliRealm:
    string_id: str
    owner_email: str
    owner_password: str
    owner_api_key: str

    @property
    def host(self) -> str:
        return f"{self.string_id}.palaver.test"


def new_string_id() -> str:
    return f"cli-{uuid.uuid4().hex[:10]}"


def api_key_from(output: str) -> str:
    key = output.rsplit(" ", 1)[-1].strip()
    assert len(key) == 32 and key.isalnum(), output
    return key


@pytest.fixture
def cli_realm(cli: Cli) -> CliRealm:
    sid = new_string_id()
    email = f"owner@{sid}.example.com"
    out = cli.ok(
        f"create-realm --name 'CLI Org' --string-id {sid} --owner-email {email}"
        " --owner-name 'Olivia Owner' --password owner-password"
    )
    return CliRealm(sid, email, "owner-password", api_key_from(out.splitlines()[1]))


def basic(email: str, api_key: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()}


def get_me(client: TestClient, realm: CliRealm, email: str, api_key: str) -> httpx.Response:
    response: httpx.Response = client.get(
        "/api/v1/users/me", headers={"host": realm.host, **basic(email, api_key)}
    )
    return response


def fetch_api_key(client: TestClient, realm: CliRealm, email: str, password: str) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/v1/fetch_api_key",
        data={"username": email, "password": password},
        headers={"host": realm.host},
    )
    return response


def users_by_email(cli: Cli, realm: CliRealm) -> dict[str, dict[str, object]]:
    rows = json.loads(cli.ok(f"list-users --realm {realm.string_id} --json"))
    return {row["email"]: row for row in rows}


# migrate -----------------------------------------------------------------------------------


def test_migrate_creates_database_under_data_dir(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = Cli(capsys, "")
    for _ in range(2):  # a second run finds nothing to do
        assert cli.raw("migrate") == Result(0, "Database is up to date.\n", "")
    assert (cli_env / "palaver.db").is_file()


def test_migrate_on_session_database(cli: Cli) -> None:
    assert cli.ok("migrate") == "Database is up to date.\n"


def test_data_dir_option(cli_env: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = Cli(capsys, "").raw(f"migrate --data-dir {tmp_path / 'elsewhere'}")
    assert result.code == 0, result
    assert (tmp_path / "elsewhere" / "palaver.db").is_file()
    assert not (cli_env / "palaver.db").exists()


# create-realm ------------------------------------------------------------------------------


def test_create_realm(cli: Cli, client: TestClient) -> None:
    sid = new_string_id()
    email = f"boss@{sid}.example.com"
    out = cli.ok(
        f"create-realm --name 'Acme Corp' --string-id {sid} --owner-email {email}"
        " --owner-name 'Bea Boss' --password pw-1"
    )
    first, second = out.splitlines()
    assert first == f"Created organization 'Acme Corp' at http://{sid}.palaver.test"
    assert second.startswith(f"Owner: {email} (user ID ")
    realm = CliRealm(sid, email, "pw-1", api_key_from(second))

    me = get_me(client, realm, email, realm.owner_api_key).json()
    assert me["result"] == "success", me
    assert me["delivery_email"] == email
    assert me["full_name"] == "Bea Boss"
    assert (me["role"], me["is_owner"]) == (100, True)
    key = fetch_api_key(client, realm, email, "pw-1").json()
    assert key["result"] == "success" and key["api_key"] == realm.owner_api_key, key


def test_create_realm_twice(cli: Cli, cli_realm: CliRealm) -> None:
    sid = cli_realm.string_id
    message = cli.fails(
        f"create-realm --name Again --string-id {sid} --owner-email x@example.com"
        " --owner-name X --password pw"
    )
    assert message == f"An organization with ID '{sid}' already exists"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--string-id Bad_ID", "Organization ID must be up to 40 lowercase"),
        ("--name '   '", "Organization name must be 1 to 40 characters"),
        ("--owner-email not-an-email", "Invalid email 'not-an-email'"),
        ("--owner-name ''", "Name too short!"),
        ("--password ''", "password cannot be empty"),
    ],
)
def test_create_realm_rejects_bad_input(cli: Cli, option: str, message: str) -> None:
    # argparse keeps the last of a repeated option, so `option` replaces a good value.
    line = (
        f"create-realm --name Org --string-id {new_string_id()} --owner-email o@example.com"
        f" --owner-name O --password pw {option}"
    )
    assert cli.fails(line).startswith(message)


def test_create_realm_without_password_off_a_terminal(cli: Cli, services: Services) -> None:
    from palaver.lib.realm import get_realm_by_string_id

    sid = new_string_id()
    message = cli.fails(
        f"create-realm --name Org --string-id {sid} --owner-email o@example.com --owner-name O"
    )
    assert message == "not a terminal, so no password prompt: give --password-file FILE or --password-stdin"
    with services.db.session() as session:
        assert get_realm_by_string_id(session, sid) is None


def test_create_realm_prompts_in_a_terminal(
    cli: Cli, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    answers = iter(["typed-secret", "typed-secret"])
    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr(getpass, "getpass", fake_getpass)
    sid = new_string_id()
    email = f"o@{sid}.example.com"
    cli.ok(f"create-realm --name Org --string-id {sid} --owner-email {email} --owner-name O")
    assert prompts == ["Password: ", "Password (again): "]
    realm = CliRealm(sid, email, "typed-secret", "")
    assert fetch_api_key(client, realm, email, "typed-secret").json()["result"] == "success"


@pytest.mark.parametrize(
    ("answers", "message"),
    [(["one", "two"], "passwords do not match"), (["", ""], "password cannot be empty")],
)
def test_terminal_prompt_errors(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, answers: list[str], message: str
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    given = iter(answers)
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": next(given))
    line = f"create-realm --name Org --string-id {new_string_id()} --owner-email o@example.com --owner-name O"
    assert cli.fails(line) == message


def test_create_realm_missing_required_option(cli: Cli) -> None:
    result = cli("create-realm --name Org")
    assert result.code == 2
    assert "the following arguments are required: --string-id, --owner-email, --owner-name" in result.err


# create-user -------------------------------------------------------------------------------


ROLE_SPELLINGS = [
    ("owner", 100, "owner"),
    ("administrator", 200, "administrator"),
    ("admin", 200, "administrator"),
    ("Moderator", 300, "moderator"),
    ("member", 400, "member"),
    ("GUEST", 600, "guest"),
    ("100", 100, "owner"),
    ("200", 200, "administrator"),
    ("300", 300, "moderator"),
    ("400", 400, "member"),
    ("600", 600, "guest"),
]


def test_created_realm_has_default_channels_and_announces_cli_users(
    cli: Cli, cli_realm: CliRealm, client: TestClient
) -> None:
    sid = cli_realm.string_id
    headers = {"host": cli_realm.host, **basic(cli_realm.owner_email, cli_realm.owner_api_key)}
    streams = client.get("/api/v1/streams", headers=headers).json()["streams"]
    ids = {s["name"]: s["stream_id"] for s in streams}
    assert set(ids) == {"general", "sandbox"}
    subs = client.get("/api/v1/users/me/subscriptions", headers=headers).json()["subscriptions"]
    assert {s["name"] for s in subs} == {"general", "sandbox"}
    # New-user announcements start off; an administrator turns them on.
    cli.ok(f"create-user --realm {sid} --email early@{sid}.example.com --full-name Early --no-password")
    params = {"signup_announcements_stream_id": str(ids["general"])}
    assert client.patch("/api/v1/realm", params=params, headers=headers).json()["result"] == "success"
    out = cli.ok(
        f"create-user --realm {sid} --email late@{sid}.example.com --full-name 'Late Comer' --no-password"
    )
    user_id = int(out.split("(user ID ", 1)[1].split(")", 1)[0])
    narrow = json.dumps([{"operator": "channel", "operand": ids["general"]}])
    query = {
        "anchor": "newest",
        "num_before": 10,
        "num_after": 0,
        "narrow": narrow,
        "apply_markdown": "false",
    }
    messages = client.get("/api/v1/messages", params=query, headers=headers).json()["messages"]
    assert [(m["sender_full_name"], m["subject"], m["content"]) for m in messages] == [
        ("Notification Bot", "signups", f"@_**Late Comer|{user_id}** joined this organization.")
    ]


def test_create_user_roles(cli: Cli, cli_realm: CliRealm, client: TestClient) -> None:
    sid = cli_realm.string_id
    expected: dict[str, str] = {}
    for i, (spelling, number, name) in enumerate(ROLE_SPELLINGS):
        email = f"u{i}@{sid}.example.com"
        out = cli.ok(
            f"create-user --realm {sid} --email {email} --full-name 'User {i}'"
            f" --role {spelling} --no-password"
        )
        first, second = out.splitlines()
        assert first.startswith(f"Created user {email} (user ID ")
        me = get_me(client, cli_realm, email, api_key_from(second)).json()
        assert me["role"] == number, (spelling, me)
        expected[email] = name
    default_email = f"plain@{sid}.example.com"
    cli.ok(f"create-user --realm {sid} --email {default_email} --full-name Plain --no-password")
    expected[default_email] = "member"

    rows = users_by_email(cli, cli_realm)
    for email, name in expected.items():
        assert rows[email]["role"] == name, email


@pytest.mark.parametrize("role", ["bogus", "0", "500", "-100", "''"])
def test_create_user_bad_role(cli: Cli, cli_realm: CliRealm, role: str) -> None:
    result = cli(
        f"create-user --realm {cli_realm.string_id} --email x@example.com --full-name X --role {role}"
    )
    assert result.code == 2
    assert "argument --role: invalid role" in result.err


def test_create_user_with_and_without_password(cli: Cli, cli_realm: CliRealm, client: TestClient) -> None:
    sid = cli_realm.string_id
    cli.ok(f"create-user --realm {sid} --email pw@{sid}.example.com --full-name P --password user-pw")
    # Off a terminal, an account without a password (API key only) must be asked for.
    assert cli.fails(f"create-user --realm {sid} --email nopw@{sid}.example.com --full-name N") == (
        "not a terminal, so no password prompt: give --password-file FILE, --password-stdin or --no-password"
    )
    cli.ok(f"create-user --realm {sid} --email nopw@{sid}.example.com --full-name N --no-password")
    assert fetch_api_key(client, cli_realm, f"pw@{sid}.example.com", "user-pw").json()["result"] == "success"
    body = fetch_api_key(client, cli_realm, f"nopw@{sid}.example.com", "").json()
    assert body["result"] == "error"


def test_create_bot(cli: Cli, cli_realm: CliRealm, client: TestClient, services: Services) -> None:
    sid = cli_realm.string_id
    email = f"helper-bot@{sid}.example.com"
    out = cli.ok(
        f"create-user --realm {sid} --email {email} --full-name 'Helper Bot'"
        f" --bot-type 1 --bot-owner {cli_realm.owner_email}"
    )
    first, second = out.splitlines()
    assert first.startswith(f"Created bot {email} (user ID ")
    me = get_me(client, cli_realm, email, api_key_from(second)).json()
    assert me["result"] == "success" and me["is_bot"] is True, me

    with services.db.session() as session:
        bot = session.scalars(select(UserProfile).where(UserProfile.delivery_email == email)).one()
        owner = session.scalars(
            select(UserProfile).where(UserProfile.delivery_email == cli_realm.owner_email)
        ).one()
        assert (bot.bot_type, bot.bot_owner_id, bot.password) == (1, owner.id, None)

    row = users_by_email(cli, cli_realm)[email]
    assert row["is_bot"] is True and row["is_active"] is True


@pytest.mark.parametrize("bot_type", [2, 3, 4])
def test_create_other_bot_types(cli: Cli, cli_realm: CliRealm, services: Services, bot_type: int) -> None:
    sid = cli_realm.string_id
    email = f"bot{bot_type}@{sid}.example.com"
    cli.ok(
        f"create-user --realm {sid} --email {email} --full-name B"
        f" --bot-type {bot_type} --bot-owner {cli_realm.owner_email}"
    )
    with services.db.session() as session:
        bot = session.scalars(select(UserProfile).where(UserProfile.delivery_email == email)).one()
        assert bot.is_bot and bot.bot_type == bot_type


def test_create_user_errors(cli: Cli, cli_realm: CliRealm) -> None:
    sid = cli_realm.string_id
    member = f"member@{sid}.example.com"
    bot = f"a-bot@{sid}.example.com"
    new = f"new@{sid}.example.com"
    cli.ok(f"create-user --realm {sid} --email {member} --full-name M --no-password")
    cli.ok(f"create-user --realm {sid} --email {bot} --full-name B --bot-type 1 --bot-owner {member}")

    def fails(options: str) -> str:
        return cli.fails(f"create-user --full-name Someone --no-password {options}")

    assert fails("--realm nowhere --email x@example.com") == "no organization with string ID 'nowhere'"
    assert fails(f"--realm {sid} --email {member}") == "Email is already in use."
    assert fails(f"--realm {sid} --email {member.upper()}") == "Email is already in use."
    assert fails(f"--realm {sid} --email nope") == "Invalid email 'nope'"
    assert fails(f"--realm {sid} --email {new} --bot-type 1") == "--bot-owner is required for a bot"
    assert fails(f"--realm {sid} --email {new} --bot-owner {member}") == (
        "--bot-owner is only for bots (give --bot-type)"
    )
    for owner in ("ghost@example.com", bot):  # no such user; a bot cannot own a bot
        assert fails(f"--realm {sid} --email {new} --bot-type 1 --bot-owner {owner}") == (
            f"no user {owner!r} in organization {sid!r} to own the bot"
        )
    assert fails(f"--realm {sid} --email {new} --bot-type 1 --bot-owner {member} --password pw") == (
        "bots have no password; they log in with their API key"
    )
    assert cli.fails(f"create-user --full-name S --realm {sid} --email {new} --password ''") == (
        "password cannot be empty"
    )
    # None of the failures created anyone.
    assert set(users_by_email(cli, cli_realm)) == {cli_realm.owner_email, member, bot}


def test_create_user_bad_bot_type(cli: Cli, cli_realm: CliRealm) -> None:
    result = cli(
        f"create-user --realm {cli_realm.string_id} --email b@example.com --full-name B"
        f" --bot-type 9 --bot-owner {cli_realm.owner_email}"
    )
    assert result.code == 2
    assert "argument --bot-type: invalid choice: 9" in result.err


# change-password, regenerate-api-key ----------------------------------------------------------


def test_change_password(cli: Cli, cli_realm: CliRealm, client: TestClient) -> None:
    email = cli_realm.owner_email
    assert fetch_api_key(client, cli_realm, email, "owner-password").json()["result"] == "success"
    out = cli.ok(f"change-password --realm {cli_realm.string_id} --email {email} --password n3w")
    assert out == f"Password changed for {email}\n"

    body = fetch_api_key(client, cli_realm, email, "n3w").json()
    assert body["result"] == "success", body
    assert body["api_key"] == cli_realm.owner_api_key  # the key is left alone
    old = fetch_api_key(client, cli_realm, email, "owner-password")
    assert old.status_code == 401 and old.json()["code"] == "AUTHENTICATION_FAILED"


def test_change_password_errors(cli: Cli, cli_realm: CliRealm) -> None:
    sid = cli_realm.string_id
    email = cli_realm.owner_email
    assert cli.fails(f"change-password --realm {sid} --email {email}") == (
        "not a terminal, so no password prompt: give --password-file FILE or --password-stdin"
    )
    assert cli.fails(f"change-password --realm {sid} --email {email} --password ''") == (
        "password cannot be empty"
    )
    assert cli.fails(f"change-password --realm {sid} --email who@example.com --password x") == (
        f"no user 'who@example.com' in organization {sid!r}"
    )
    assert cli.fails(f"change-password --realm nowhere --email {email} --password x") == (
        "no organization with string ID 'nowhere'"
    )


def test_regenerate_api_key(cli: Cli, cli_realm: CliRealm, client: TestClient) -> None:
    email = cli_realm.owner_email
    out = cli.ok(f"regenerate-api-key --realm {cli_realm.string_id} --email {email}")
    new_key = api_key_from(out)
    assert out == new_key + "\n"
    assert new_key != cli_realm.owner_api_key

    assert get_me(client, cli_realm, email, new_key).json()["result"] == "success"
    old = get_me(client, cli_realm, email, cli_realm.owner_api_key)
    assert old.status_code == 401 and old.json()["code"] == "UNAUTHORIZED"
    assert fetch_api_key(client, cli_realm, email, "owner-password").json()["api_key"] == new_key


def test_regenerate_api_key_unknown_user(cli: Cli, cli_realm: CliRealm) -> None:
    message = cli.fails(f"regenerate-api-key --realm {cli_realm.string_id} --email x@example.com")
    assert message == f"no user 'x@example.com' in organization {cli_realm.string_id!r}"


# list-users --------------------------------------------------------------------------------


def test_list_users(cli: Cli, cli_realm: CliRealm) -> None:
    sid = cli_realm.string_id
    guest, bot = f"gina@{sid}.example.com", f"robo@{sid}.example.com"
    cli.ok(f"create-user --realm {sid} --email {guest} --full-name 'Gina Guest' --role guest --no-password")
    cli.ok(f"create-user --realm {sid} --email {bot} --full-name Robo --bot-type 1 --bot-owner {guest}")

    rows = json.loads(cli.ok(f"list-users --realm {sid} --json"))
    assert [(r["email"], r["full_name"], r["role"], r["is_bot"], r["is_active"]) for r in rows] == [
        (cli_realm.owner_email, "Olivia Owner", "owner", False, True),
        (guest, "Gina Guest", "guest", False, True),
        (bot, "Robo", "member", True, True),
    ]
    ids = [r["user_id"] for r in rows]
    assert ids == sorted(ids) and all(isinstance(i, int) for i in ids)

    lines = cli.ok(f"list-users --realm {sid}").splitlines()
    assert lines[0].split() == ["ID", "EMAIL", "ROLE", "ACTIVE", "NAME"]
    assert len(lines) == 4
    for line, row in zip(lines[1:], rows, strict=True):
        assert line.split()[:2] == [str(row["user_id"]), row["email"]]
        assert line.endswith(f" yes    {row['full_name']}")
    assert " guest " in lines[2]
    assert " member bot " in lines[3]


def test_list_users_unknown_realm(cli: Cli) -> None:
    assert cli.fails("list-users --realm nope --json") == "no organization with string ID 'nope'"


# Configuration and usage errors -------------------------------------------------------------


def test_invalid_configuration_in_process(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAVER_PORT", "abc")
    message = cli.fails("migrate")
    assert message.startswith("invalid setting port (from PALAVER_PORT): "), message


def test_missing_config_file_in_process(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    result = cli.raw(f"--config {path} migrate")
    assert expect_clean_failure(result) == f"configuration file {path} does not exist"


def test_bad_database_url_in_process(cli: Cli) -> None:
    result = cli.raw("migrate --database-url mysql://u@h/db")
    assert expect_clean_failure(result).startswith("invalid setting database_url (from command line): ")


def test_unreachable_database_is_one_line(cli: Cli) -> None:
    # Port 1 on loopback refuses at once; the driver's reason is kept, the traceback is not.
    result = cli.raw("migrate --database-url postgresql://nobody@127.0.0.1:1/none")
    message = expect_clean_failure(result)
    assert message.startswith("database error: "), message
    assert "127.0.0.1" in message


def test_serve_with_workers_needs_redis(cli: Cli) -> None:
    message = cli.fails("serve --workers 2 --port 1")
    assert message.startswith("--workers above 1 needs a Redis URL"), message


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("frobnicate", "argument COMMAND: invalid choice: 'frobnicate'"),
        ("", "the following arguments are required: COMMAND"),
        ("serve --port abc", "argument --port: invalid int value: 'abc'"),
        ("migrate --bogus", "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, line: str, needle: str) -> None:
    result = cli.raw(line)
    assert result.code == 2
    assert result.out == ""
    assert "usage: palaver" in result.err
    assert needle in result.err


# As a subprocess ---------------------------------------------------------------------------


def palaver_command() -> list[str]:
    script = Path(sys.executable).parent / "palaver"
    return [str(script)] if script.exists() else [sys.executable, "-m", "palaver.cli"]


@pytest.fixture
def subprocess_env(tmp_path: Path) -> dict[str, str]:
    env = _without_palaver_settings(dict(os.environ))
    env.update(FAST_HASHING, PALAVER_DATA_DIR=str(tmp_path / "data"))
    return env


def run_palaver(
    env: dict[str, str], line: str, *, entry_point: bool = False
) -> subprocess.CompletedProcess[str]:
    """``palaver`` as a process of its own, configured by ``env`` alone, stdin /dev/null (not a
    terminal, as under cron, CI or a deployment script). Forked from the tests' fork server
    (``tests/forked.py``), or with ``entry_point`` the installed ``palaver`` command."""
    if not entry_point:
        return run_forked(env, shlex.split(line), Path(env["PALAVER_DATA_DIR"]).parent / "commands")
    return subprocess.run(
        [*palaver_command(), *shlex.split(line)],
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_subprocess_account_workflow(subprocess_env: dict[str, str], tmp_path: Path) -> None:
    env = subprocess_env
    # The installed command once (the other steps run the same main() in forked processes).
    migrated = run_palaver(env, "migrate", entry_point=True)
    assert (migrated.returncode, migrated.stdout, migrated.stderr) == (0, "Database is up to date.\n", "")
    assert (tmp_path / "data" / "palaver.db").is_file()

    realm = "create-realm --name 'Root Org' --string-id '' --owner-email boss@example.com --owner-name Boss"
    no_password = run_palaver(env, realm)
    assert (no_password.returncode, no_password.stdout, no_password.stderr) == (
        1,
        "",
        "palaver: error: not a terminal, so no password prompt:"
        " give --password-file FILE or --password-stdin\n",
    )

    # --database-url naming the same file works the same as the data dir.
    url = f"sqlite:///{tmp_path / 'data' / 'palaver.db'}"
    created = run_palaver(env, f"{realm} --password pw --database-url {url}")
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("Created organization 'Root Org' at http://127.0.0.1:9991\n")

    # --realm defaults to the root-domain realm.
    user = run_palaver(env, "create-user --email ann@example.com --full-name Ann --role 300 --no-password")
    assert user.returncode == 0, user.stderr
    dup = run_palaver(env, "create-user --email ann@example.com --full-name Ann --no-password")
    assert (dup.returncode, dup.stdout, dup.stderr) == (1, "", "palaver: error: Email is already in use.\n")

    listed = run_palaver(env, "list-users --json")
    assert listed.returncode == 0, listed.stderr
    assert [(r["email"], r["role"]) for r in json.loads(listed.stdout)] == [
        ("boss@example.com", "owner"),
        ("ann@example.com", "moderator"),
    ]


@pytest.mark.parametrize(
    ("extra_env", "line", "message"),
    [
        ({"PALAVER_PORT": "abc"}, "migrate", "invalid setting port (from PALAVER_PORT): "),
        (
            {"DATABASE_URL": "mysql://u@h/db"},
            "list-users",
            "invalid setting database_url (from DATABASE_URL)",
        ),
        ({"PALAVER_CONFIG": "/nonexistent/palaver.toml"}, "migrate", "configuration file /nonexistent/"),
        ({"PALAVER_LOG_LEVEL": "loud"}, "serve", "invalid setting log_level"),
    ],
)
def test_subprocess_invalid_configuration(
    subprocess_env: dict[str, str], extra_env: dict[str, str], line: str, message: str
) -> None:
    result = run_palaver({**subprocess_env, **extra_env}, line)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"palaver: error: {message}"), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_subprocess_unknown_subcommand(subprocess_env: dict[str, str]) -> None:
    result = run_palaver(subprocess_env, "frobnicate", entry_point=True)
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_closed_pipe_ends_commands_quietly(subprocess_env: dict[str, str]) -> None:
    """`palaver outbox | head`: the reader has gone before the command writes."""
    assert run_palaver(subprocess_env, "migrate").returncode == 0
    for line in ("--help", "migrate", "list-realms", "outbox", "list-realms --json"):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run(
                [*palaver_command(), *shlex.split(line)],
                check=False,
                env=subprocess_env,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
            )
        finally:
            os.close(write_end)
        # 141 as after SIGPIPE; argparse's own --help ignores the closed pipe and exits 0.
        assert done.stderr == "" and done.returncode == (0 if line == "--help" else 141), line
