"""``palaver serve`` as a real process, driven by the ``zulip`` PyPI client.

The server starts on an empty database, creates the demo organization, and prints a zuliprc
that the client then uses (``tests/e2e/demo.py``).
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import zulip

from tests.e2e.demo import demo_server, empty_database
from tests.forked import run_forked
from tests.servers import RunningServer, clean_environment, free_port

pytestmark = pytest.mark.e2e

DEMO_EMAILS = {
    "owner@example.com",
    "alice@example.com",
    "bob@example.com",
    "gus@example.com",
    "demo-bot@example.com",
}


# Its own server: these tests check the demo organization exactly as ``serve`` made it, and
# what an operator runs: the installed ``palaver`` command (other tests fork theirs).
@pytest.fixture(scope="module")
def server_database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with empty_database(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, server_database_url: str) -> Iterator[RunningServer]:
    with demo_server(tmp_path_factory, server_database_url, entry_point=True) as running:
        yield running


def printed_field(output: str, label: str) -> str:
    for line in output.splitlines():
        if line.strip().startswith(f"{label}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {label!r} line in:\n{output}")


def printed_zuliprc(output: str) -> str:
    """The zuliprc block ``serve`` prints after its ``zuliprc (also saved to ...):`` line."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("zuliprc (also saved to "))
    block = []
    for line in lines[start + 1 :]:
        if line.startswith("Palaver is serving on"):
            break
        block.append(line)
    return "\n".join(block).strip() + "\n"


@pytest.fixture(scope="module")
def client(server: RunningServer) -> zulip.Client:
    return zulip.Client(config_file=str(server.zuliprc))


# The demo organization and its zuliprc ----------------------------------------------------


def test_serve_prints_demo_login_and_zuliprc(server: RunningServer) -> None:
    output = server.output()
    assert 'Created the demo organization "Palaver Demo".' in output
    assert f"zuliprc (also saved to {server.zuliprc}):" in output
    # The address is printed once when clients use the address bound.
    assert f"Palaver is serving on {server.url}\n" in output
    assert printed_field(output, "URL") == server.url
    assert printed_field(output, "Email") == "owner@example.com"

    saved = server.zuliprc.read_text()
    assert printed_zuliprc(output) == saved
    api_key = printed_field(output, "API key")
    assert saved == f"[api]\nemail=owner@example.com\nkey={api_key}\nsite={server.url}\n"
    # It holds an owner's API key.
    assert stat.S_IMODE(server.zuliprc.stat().st_mode) == 0o600


def test_printed_password_fetches_the_api_key(server: RunningServer, client: zulip.Client) -> None:
    output = server.output()
    result = client.call_endpoint(
        "fetch_api_key",
        method="POST",
        request={"username": "owner@example.com", "password": printed_field(output, "Password")},
    )
    assert result["result"] == "success", result
    assert result["api_key"] == printed_field(output, "API key")
    assert result["email"] == "owner@example.com"


# The zulip client ---------------------------------------------------------------------------


def test_get_profile(client: zulip.Client) -> None:
    profile = client.get_profile()
    assert profile["result"] == "success", profile
    assert profile["email"] == "owner@example.com"
    assert profile["full_name"] == "Demo Owner"
    assert (profile["role"], profile["is_owner"], profile["is_admin"]) == (100, True, True)
    assert profile["is_bot"] is False
    assert isinstance(profile["user_id"], int)


def test_get_members(client: zulip.Client) -> None:
    result = client.get_members()
    assert result["result"] == "success", result
    members = {m["email"]: m for m in result["members"]}
    assert set(members) == DEMO_EMAILS
    owner_id = members["owner@example.com"]["user_id"]
    assert members["alice@example.com"]["role"] == 200
    assert members["bob@example.com"]["role"] == 400
    assert members["gus@example.com"]["is_guest"] is True
    bot = members["demo-bot@example.com"]
    assert (bot["is_bot"], bot["bot_owner_id"]) == (True, owner_id)


def test_get_user_by_id(client: zulip.Client) -> None:
    members = {m["email"]: m for m in client.get_members()["members"]}
    alice_id = members["alice@example.com"]["user_id"]
    result = client.get_user_by_id(alice_id)
    assert result["result"] == "success", result
    assert result["user"]["user_id"] == alice_id
    assert result["user"]["full_name"] == "Alice Admin"
    assert result["user"]["is_admin"] is True

    missing = client.get_user_by_id(max(m["user_id"] for m in members.values()) + 1000)
    assert (missing["result"], missing["msg"]) == ("error", "No such user")


def test_bad_credentials(server: RunningServer) -> None:
    bad_key = zulip.Client(email="owner@example.com", api_key="x" * 32, site=server.url)
    result = bad_key.get_profile()
    assert result["result"] == "error", result
    # Zulip's answer to a wrong key in HTTP Basic credentials.
    assert (result["code"], result["msg"]) == ("UNAUTHORIZED", "Invalid API key")

    key = printed_field(server.output(), "API key")
    wrong_email = zulip.Client(email="bob@example.com", api_key=key, site=server.url)
    assert wrong_email.get_profile()["code"] == "UNAUTHORIZED"


def test_missing_parameter(client: zulip.Client) -> None:
    result = client.call_endpoint(
        "users", method="POST", request={"email": "new@example.com", "full_name": "New Person"}
    )
    assert result["result"] == "error", result
    assert result["code"] == "REQUEST_VARIABLE_MISSING"
    assert result["var_name"] == "password"
    assert result["msg"] == "Missing 'password' argument"
    # Nobody was created.
    assert "new@example.com" not in {m["email"] for m in client.get_members()["members"]}


def test_unknown_endpoint(client: zulip.Client) -> None:
    result = client.call_endpoint("no/such/endpoint", method="GET")
    assert (result["result"], result["msg"]) == ("error", "Not Found")


# Start-up refusals ------------------------------------------------------------------------


def test_several_workers_need_redis(tmp_path: Path) -> None:
    env = clean_environment(PALAVER_DATA_DIR=str(tmp_path / "data"))
    done = run_forked(env, ["serve", "--workers", "2", "--port", str(free_port())], tmp_path / "commands")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "palaver: error: --workers above 1 needs a Redis URL (PALAVER_REDIS_URL): "
        "events must cross processes\n"
    )
    # It refused before touching the database.
    assert not (tmp_path / "data").exists()
