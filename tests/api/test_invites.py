"""Invitations: the six endpoints, their permissions and errors, the email, and sign-up."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from palaver.workers.email import EmailWorker
from tests.client import TestClient
from tests.email_helpers import SmtpSink, deliver, links, parts, smtp_server, worker
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.helpers import TestUser as User

__all__ = ["smtp_server", "worker"]


def invites(api: Api, user: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = assert_json_success(api.get(user, "invites"))["invites"]
    return result


def create_channel(api: Api, realm: SeededRealm, name: str) -> int:
    body = assert_json_success(
        api.post(realm.iago, "channels/create", {"name": name, "subscribers": [realm.iago.id]})
    )
    channel_id: int = body["id"]
    return channel_id


def test_send_list_and_event(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    new = f"ann@{realm.string_id}.example.com"
    assert_json_success(
        api.post(
            realm.hamlet, "invites", {"invitee_emails": f"{new}, Bob <bob@x.example.com>\n", "stream_ids": []}
        )
    )
    mine = invites(api, realm.hamlet)
    assert [i["email"] for i in mine] == [new, "bob@x.example.com"]
    first = mine[0]
    assert first["invited_by_user_id"] == realm.hamlet.id
    assert first["invited_as"] == 400 and first["is_multiuse"] is False
    assert first["notify_referrer_on_join"] is True
    assert first["expiry_date"] - first["invited"] == 14400 * 60
    assert set(first) == {
        "id", "invited_by_user_id", "invited", "expiry_date", "invited_as", "email",
        "notify_referrer_on_join", "is_multiuse",
    }  # fmt: skip
    # Administrators manage every invitation; other members only their own.
    assert len(invites(api, realm.iago)) == 2
    assert invites(api, realm.othello) == []
    [(event, users)] = events.of_type("invites_changed")
    assert event == {"type": "invites_changed"}
    assert users == sorted([realm.desdemona.id, realm.iago.id, realm.hamlet.id])


def test_send_errors(api: Api, realm: SeededRealm) -> None:
    def post(user: User, **data: Any) -> httpx.Response:
        return api.post(user, "invites", {"stream_ids": [], **data})

    assert_json_error(
        post(realm.hamlet, invitee_emails=" ,\n"), "You must specify at least one email address."
    )
    assert_json_error(post(realm.polonius, invitee_emails="a@b.example.com"), "Insufficient permission")
    assert_json_error(
        post(realm.hamlet, invitee_emails="a@b.example.com", invite_as=200), "Insufficient permission"
    )
    assert_json_error(
        post(realm.shiva, invitee_emails="a@b.example.com", invite_as=100), "Insufficient permission"
    )
    assert_json_error(post(realm.hamlet, invitee_emails="a@b.example.com", invite_as=7), "Invalid invite_as")
    assert_json_error(
        post(realm.hamlet, invitee_emails="a@b.example.com", stream_ids=[987654]),
        "Invalid channel ID 987654. No invites were sent.",
    )
    assert_json_error(
        api.post(realm.hamlet, "invites", {"invitee_emails": "a@b.example.com"}),
        "Missing 'stream_ids' argument",
    )
    body = assert_json_error(
        post(realm.hamlet, invitee_emails="good@b.example.com, not-an-address"),
        "Some emails did not validate, so we didn't send any invitations.",
        code="INVITATION_FAILED",
    )
    assert body["errors"] == [["not-an-address", "Invalid address.", False]]
    assert body["sent_invitations"] is False
    assert invites(api, realm.hamlet) == []
    body = assert_json_error(
        post(realm.hamlet, invitee_emails=f"{realm.othello.email}, fresh@b.example.com"),
        "Some of those addresses are already using Zulip, so we didn't send them an invitation. "
        "We did send invitations to everyone else!",
        code="INVITATION_FAILED",
    )
    assert body["errors"] == [[realm.othello.email, "Already has an account.", False]]
    assert body["sent_invitations"] is True and body["daily_limit_reached"] is False
    assert [i["email"] for i in invites(api, realm.hamlet)] == ["fresh@b.example.com"]


def test_multiuse_links_revoke_and_resend(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "invites/multiuse", {}), "Insufficient permission")
    link = assert_json_success(api.post(realm.iago, "invites/multiuse", {"invite_expires_in_minutes": None}))[
        "invite_link"
    ]
    assert re.fullmatch(rf"http://{re.escape(realm.host)}/join/[0-9a-f]{{24}}/", link)
    [listed] = invites(api, realm.iago)
    assert listed["link_url"] == link and listed["expiry_date"] is None and "email" not in listed
    assert_json_error(api.delete(realm.iago, f"invites/{listed['id']}"), "No such invitation")
    assert_json_error(
        api.delete(realm.hamlet, f"invites/multiuse/{listed['id']}"), "Must be an organization administrator"
    )
    assert_json_success(api.delete(realm.iago, f"invites/multiuse/{listed['id']}"))
    assert_json_error(
        api.delete(realm.iago, f"invites/multiuse/{listed['id']}"), "Invitation has already been revoked"
    )
    assert invites(api, realm.iago) == []

    assert_json_success(
        api.post(realm.hamlet, "invites", {"invitee_emails": "r@b.example.com", "stream_ids": []})
    )
    [mine] = invites(api, realm.hamlet)
    assert_json_error(
        api.post(realm.othello, f"invites/{mine['id']}/resend"), "Must be an organization administrator"
    )
    assert_json_success(api.post(realm.hamlet, f"invites/{mine['id']}/resend"))
    assert_json_error(api.delete(realm.hamlet, "invites/99999999"), "No such invitation")
    assert_json_success(api.delete(realm.iago, f"invites/{mine['id']}"))
    assert_json_error(api.post(realm.hamlet, f"invites/{mine['id']}/resend"), "No such invitation")
    assert invites(api, realm.hamlet) == []


def _signup_page(client: TestClient, realm: SeededRealm, url: str, **form: str) -> Any:
    path = url.split(realm.host, 1)[1]
    if not form:
        return client.get(path, headers={"host": realm.host})
    return client.post(path, data=form, headers={"host": realm.host})


def test_invited_person_signs_up_from_the_email(
    api: Api, client: TestClient, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    channel = create_channel(api, realm, "Verona")
    new = f"juliet@{realm.string_id}.example.com"
    assert_json_success(
        api.post(
            realm.iago,
            "invites",
            {
                "invitee_emails": new,
                "stream_ids": [channel],
                "invite_as": 300,
                "notify_referrer_on_join": True,
            },
        )
    )
    [email] = deliver(worker, smtp_server, new)
    assert email["Subject"] == "Iago invited you to join Test Organization"
    assert email["Reply-To"] == realm.iago.email
    assert email["From"].startswith("Iago <noreply@")
    text, html = parts(email)
    [link] = [u for u in links(text) if "/join/" in u]
    assert f'href="{link}"' in html

    page = _signup_page(client, realm, link)
    assert page.status_code == 200 and "Join Test Organization" in page.text and new in page.text
    bad = _signup_page(client, realm, link, full_name="Juliet", password="123")
    assert bad.status_code == 400 and "at least 6 characters" in bad.text
    done = _signup_page(
        client, realm, link, full_name="Juliet Capulet", password="balcony-scene", email="other@x.com"
    )
    assert done.status_code == 200, done.text
    assert "You can now log in" in done.text and f'href="http://{realm.host}/"' in done.text

    login = assert_json_success(
        api.post(None, "fetch_api_key", {"username": new, "password": "balcony-scene"})
    )
    me = assert_json_success(
        api.get(None, "users/me", headers={"authorization": _basic(new, login["api_key"])})
    )
    assert me["role"] == 300 and me["full_name"] == "Juliet Capulet"
    subs = assert_json_success(
        api.get(None, "users/me/subscriptions", headers={"authorization": _basic(new, login["api_key"])})
    )
    assert [s["stream_id"] for s in subs["subscriptions"]] == [channel]
    assert invites(api, realm.iago) == []
    # The referrer hears from the Notification Bot.
    dms = assert_json_success(
        api.get(
            realm.iago,
            "messages",
            {
                "anchor": "newest",
                "num_before": 1,
                "num_after": 0,
                "narrow": [{"operator": "is", "operand": "dm"}],
            },
        )
    )["messages"]
    assert "accepted your invitation to join Test Organization!" in dms[-1]["content"]
    assert dms[-1]["sender_full_name"] == "Notification Bot"
    # The link is spent.
    again = _signup_page(client, realm, link)
    assert again.status_code == 404 and "expired" in again.text


def _basic(email: str, key: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{email}:{key}".encode()).decode()


def test_reusable_link_signup_and_domain_rules(api: Api, client: TestClient, realm: SeededRealm) -> None:
    link = assert_json_success(api.post(realm.iago, "invites/multiuse", {"invite_as": 600}))["invite_link"]
    page = _signup_page(client, realm, link)
    assert 'name="email"' in page.text and "readonly" not in page.text
    # Restricted domains are enforced at sign-up.
    assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": "good.example.com", "allow_subdomains": False})
    )
    assert_json_success(api.patch(realm.desdemona, "realm", {"emails_restricted_to_domains": True}))
    refused = _signup_page(
        client, realm, link, email="x@bad.example.com", full_name="X", password="password1"
    )
    assert refused.status_code == 400 and "not allowed in this organization" in refused.text
    for name in ("one", "two"):
        ok = _signup_page(
            client, realm, link, email=f"{name}@good.example.com", full_name=name, password="password1"
        )
        assert ok.status_code == 200, ok.text
    login = assert_json_success(
        api.post(None, "fetch_api_key", {"username": "two@good.example.com", "password": "password1"})
    )
    me = assert_json_success(
        api.get(None, "users/me", headers={"authorization": _basic("two@good.example.com", login["api_key"])})
    )
    assert me["role"] == 600


def test_open_signup_needs_invite_required_off(api: Api, client: TestClient, realm: SeededRealm) -> None:
    closed = client.get("/register/", headers={"host": realm.host})
    assert closed.status_code == 403 and "invitation" in closed.text
    assert_json_success(api.patch(realm.desdemona, "realm", {"invite_required": False}))
    done = client.post(
        "/register/",
        data={"email": "walkin@open.example.com", "full_name": "Walk In", "password": "password1"},
        headers={"host": realm.host},
    )
    assert done.status_code == 200 and "You can now log in" in done.text
    taken = client.post(
        "/register/",
        data={"email": "walkin@open.example.com", "full_name": "Walk In", "password": "password1"},
        headers={"host": realm.host},
    )
    assert taken.status_code == 400 and "already in use" in taken.text


@pytest.mark.parametrize("minutes", [0, -5])
def test_bad_expiry(api: Api, realm: SeededRealm, minutes: int) -> None:
    assert_json_error(
        api.post(
            realm.hamlet,
            "invites",
            {"invitee_emails": "a@b.example.com", "stream_ids": [], "invite_expires_in_minutes": minutes},
        ),
        "Invalid invite_expires_in_minutes",
    )


def test_signup_from_the_outbox_directory_and_chat(
    api: Api, client: TestClient, realm: SeededRealm, services: Any, tmp_path: Any, capsys: Any
) -> None:
    """The embedded default: no SMTP, the invitation is read from `palaver outbox`."""
    from palaver.cli import main
    from palaver.lib.email.transport import DirectoryTransport

    new = f"romeo@{realm.string_id}.example.com"
    assert_json_success(api.post(realm.hamlet, "invites", {"invitee_emails": new, "stream_ids": []}))
    EmailWorker(services, transport=DirectoryTransport(tmp_path / "outbox")).run_once()
    main(["outbox", "--data-dir", str(tmp_path), "--json"])
    import json

    [entry] = [e for e in json.loads(capsys.readouterr().out) if e["to"] == new]
    main(["outbox", "--data-dir", str(tmp_path), "--show", entry["file"].rsplit("/", 1)[1]])
    shown = capsys.readouterr().out
    [link] = [u for u in links(shown) if "/join/" in u]
    assert _signup_page(client, realm, link, full_name="Romeo", password="wherefore").status_code == 200
    login = assert_json_success(api.post(None, "fetch_api_key", {"username": new, "password": "wherefore"}))
    auth = {"authorization": _basic(new, login["api_key"])}
    sent = api.post(
        None, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "hi"}, headers=auth
    )
    assert_json_success(sent)


@pytest.mark.parametrize("include_defaults", [True, False])
def test_include_realm_default_subscriptions(
    api: Api, client: TestClient, realm: SeededRealm, include_defaults: bool
) -> None:
    default = create_channel(api, realm, "Lobby")
    extra = create_channel(api, realm, "Extra")
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": default}))
    link = assert_json_success(
        api.post(
            realm.iago,
            "invites/multiuse",
            {"stream_ids": [extra], "include_realm_default_subscriptions": include_defaults},
        )
    )["invite_link"]
    email = f"new-{include_defaults}@{realm.string_id}.example.com"
    assert (
        _signup_page(client, realm, link, email=email, full_name="New", password="password1").status_code
        == 200
    )
    login = assert_json_success(api.post(None, "fetch_api_key", {"username": email, "password": "password1"}))
    auth = {"authorization": _basic(email, login["api_key"])}
    subs = assert_json_success(api.get(None, "users/me/subscriptions", headers=auth))["subscriptions"]
    expected = {default, extra} if include_defaults else {extra}
    assert {s["stream_id"] for s in subs} == expected
