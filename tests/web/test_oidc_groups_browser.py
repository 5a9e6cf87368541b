"""A provider's groups claim mapped to Palaver roles and user groups at each sign-in, in a
real Chromium against npm's oidc-provider (tests/oidc_server.py) and a real ``palaver serve``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.oidc_server import CLIENT_ID, CLIENT_SECRET, Provider, running_provider
from tests.servers import free_port
from tests.web.conftest import LiveServer, start_live_server, wait_for_app

ACCOUNTS: dict[str, dict[str, Any]] = {
    "grace": {
        "email": "grace@corp.example",
        "email_verified": True,
        "name": "Grace Hopper",
        "groups": ["chat-admins", "eng"],
    },
    "iago": {"email": "iago@example.com", "email_verified": True, "name": "Iago", "groups": ["eng"]},
    "desdemona": {
        "email": "desdemona@example.com",
        "email_verified": True,
        "name": "Desdemona",
        "groups": [],
    },
}


@pytest.fixture(scope="module")
def server_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory, server_port: int) -> Iterator[Provider]:
    redirect = f"http://127.0.0.1:{server_port}/complete/oidc/teams/"
    accounts = {login: dict(values) for login, values in ACCOUNTS.items()}
    with running_provider(tmp_path_factory.mktemp("oidc-groups"), [redirect], accounts) as running:
        yield running


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, server_port: int, provider: Provider
) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("oidc-groups-server")
    config = tmp / "palaver.toml"
    config.write_text(
        f"""[auth.oidc.teams]
display_name = "Teams SSO"
issuer = "{provider.issuer}"
client_id = "{CLIENT_ID}"
client_secret = "{CLIENT_SECRET}"
scopes = ["openid", "email", "profile", "groups"]
groups_claim = "groups"
role_map = {{ "chat-admins" = "administrator", "chat-mods" = "moderator" }}
group_map = {{ "eng" = "engineering" }}
"""
    )
    live = start_live_server(tmp, port=server_port, config=config, open_signup=True)
    try:
        yield live
    finally:
        live.stop()


def _sign_in(server: LiveServer, page: Any, login: str) -> dict[str, Any]:
    """Through the login page's button and the provider's own login and consent pages."""
    page.goto(server.url + "/")
    page.click("a[data-provider='oidc:teams']")
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_selector("button[type=submit]")
    page.click("button[type=submit]")  # consent: "Continue"
    wait_for_app(page)
    me: dict[str, Any] = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    return me


def _set_groups(provider: Provider, login: str, groups: list[str]) -> None:
    provider.accounts[login]["groups"] = groups
    provider.stop()
    provider.start()


def _members(api: httpx.Client, group_id: int) -> list[int]:
    body = api.get(f"user_groups/{group_id}/members", params={"direct_member_only": "true"}).json()
    return sorted(body["members"])


def _events(api: httpx.Client, queue: dict[str, Any]) -> list[dict[str, Any]]:
    params = {"queue_id": queue["queue_id"], "last_event_id": "-1", "dont_block": "true"}
    return [e for e in api.get("events", params=params).json()["events"] if e["type"] != "heartbeat"]


def test_groups_claim_sets_role_and_user_groups_at_each_sign_in(
    server: LiveServer, provider: Provider, new_page: Callable[..., Any]
) -> None:
    owner = server.api("desdemona")
    created = owner.post(
        "user_groups/create",
        data={"name": "engineering", "description": "Builders", "members": "[]"},
    )
    assert created.status_code == 200, created.text
    group_id = created.json()["group_id"]
    queue = owner.post("register", data={"event_types": '["realm_user", "user_group"]'}).json()

    # First sign-in: the account is made with the mapped role and group.
    me = _sign_in(server, new_page(), "grace")
    assert me["role"] == 200 and me["full_name"] == "Grace Hopper"
    grace = me["user_id"]
    assert _members(owner, group_id) == [grace]
    events = _events(owner, queue)
    assert {"type": "user_group", "op": "add_members", "group_id": group_id, "user_ids": [grace]} in [
        {k: e[k] for k in ("type", "op", "group_id", "user_ids")} for e in events if e["type"] == "user_group"
    ]

    # Out of chat-admins at the provider: the next sign-in makes her a member again.
    _set_groups(provider, "grace", ["eng"])
    assert _sign_in(server, new_page(), "grace")["role"] == 400
    events = _events(owner, queue)
    assert any(
        e["type"] == "realm_user" and e["person"] == {"user_id": grace, "role": 400} for e in events
    ), events
    # And out of eng: out of engineering too.
    _set_groups(provider, "grace", [])
    _sign_in(server, new_page(), "grace")
    assert _members(owner, group_id) == []
    assert any(e["type"] == "user_group" and e["op"] == "remove_members" for e in _events(owner, queue))
    owner.close()


def test_roles_are_never_above_the_mapping_and_the_last_owner_stays(
    server: LiveServer, new_page: Callable[..., Any]
) -> None:
    # Iago is an administrator made in Palaver; his groups map to no role, so he is a member.
    assert _sign_in(server, new_page(), "iago")["role"] == 400
    # Desdemona is the only owner: no mapping demotes her.
    assert _sign_in(server, new_page(), "desdemona")["role"] == 100
