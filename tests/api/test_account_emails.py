"""Password reset, email-change confirmation and new-login notices, through a real SMTP server."""

from __future__ import annotations

from palaver.workers.email import EmailWorker
from tests.client import TestClient
from tests.email_helpers import SmtpSink, deliver, links, parts, smtp_server, worker
from tests.helpers import PASSWORD, Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

__all__ = ["smtp_server", "worker"]


def _path(realm: SeededRealm, url: str) -> str:
    return url.split(realm.host, 1)[1]


def test_password_reset(
    api: Api, client: TestClient, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    host = {"host": realm.host}
    form = client.get("/accounts/password/reset/", headers=host)
    assert form.status_code == 200 and 'name="email"' in form.text
    sent = client.post("/accounts/password/reset/", data={"email": realm.hamlet.email}, headers=host)
    assert sent.status_code == 200 and "Check your email" in sent.text
    # Unknown addresses get the same page, and an email saying there is no account.
    client.post("/accounts/password/reset/", data={"email": "nobody@x.example.com"}, headers=host)
    [unknown] = deliver(worker, smtp_server, "nobody@x.example.com")
    assert "no active account" in parts(unknown)[0]
    [email] = smtp_server.to(realm.hamlet.email)
    assert email["Subject"] == "Reset your password for Test Organization"
    text, html = parts(email)
    [link] = [u for u in links(text) if "/accounts/password/reset/" in u and u.rstrip("/")[-1] != "t"]
    assert f'href="{link}"' in html
    path = _path(realm, link)
    assert client.get(path, headers=host).status_code == 200
    mismatch = client.post(
        path, data={"new_password": "brand-new-1", "new_password_again": "x"}, headers=host
    )
    assert mismatch.status_code == 400 and "do not match" in mismatch.text
    done = client.post(
        path, data={"new_password": "brand-new-1", "new_password_again": "brand-new-1"}, headers=host
    )
    assert done.status_code == 200 and "Password changed" in done.text
    assert_json_success(
        api.post(None, "fetch_api_key", {"username": realm.hamlet.email, "password": "brand-new-1"})
    )
    assert_json_error(
        api.post(None, "fetch_api_key", {"username": realm.hamlet.email, "password": PASSWORD}),
        "Your username or password is incorrect",
        401,
    )
    used = client.get(path, headers=host)
    assert used.status_code == 404 and "already been used" in used.text


def test_email_change_applies_on_confirmation(
    api: Api,
    client: TestClient,
    realm: SeededRealm,
    smtp_server: SmtpSink,
    worker: EmailWorker,
    events: EventRecorder,
) -> None:
    new = f"hamlet-new@{realm.string_id}.example.com"
    assert_json_success(api.patch(realm.hamlet, "settings", {"email": new}))
    [email] = deliver(worker, smtp_server, new)
    assert email["Subject"] == "Confirm your new email address for Test Organization"
    text, _ = parts(email)
    assert realm.hamlet.email in text
    [link] = [u for u in links(text) if "/confirm_new_email/" in u]
    events.clear()
    page = client.get(_path(realm, link), headers={"host": realm.host})
    assert page.status_code == 200 and new in page.text
    me = assert_json_success(api.get(realm.iago, f"users/{realm.hamlet.id}"))["user"]
    assert me["delivery_email"] == new
    updates = [e["person"] for e, _ in events.of_type("realm_user", "update")]
    assert {"user_id": realm.hamlet.id, "delivery_email": new} in updates
    assert_json_success(api.post(None, "fetch_api_key", {"username": new, "password": PASSWORD}))
    again = client.get(_path(realm, link), headers={"host": realm.host})
    assert again.status_code == 404


def test_login_notice(api: Api, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker) -> None:
    login = {"username": realm.cordelia.email, "password": PASSWORD}
    # The first login after the account was made is expected: no email.
    assert_json_success(api.post(None, "fetch_api_key", login))
    assert deliver(worker, smtp_server, realm.cordelia.email) == []
    assert_json_success(api.post(None, "fetch_api_key", login, headers={"user-agent": "ZulipMobile/1.0"}))
    [email] = deliver(worker, smtp_server, realm.cordelia.email)
    assert email["Subject"] == "New login to Test Organization"
    assert "ZulipMobile/1.0" in parts(email)[0]
    assert_json_success(api.patch(realm.cordelia, "settings", {"enable_login_emails": False}))
    assert_json_success(api.post(None, "fetch_api_key", login))
    assert len(deliver(worker, smtp_server, realm.cordelia.email)) == 1
