"""/json/...: every API endpoint, authenticated by the session cookie, writes guarded by CSRF."""

from __future__ import annotations

import pytest

from tests.client import TestClient
from tests.helpers import SeededRealm
from tests.web.web_helpers import log_in


def test_users_me_works_with_the_cookie_and_not_without(web: TestClient, realm: SeededRealm) -> None:
    anonymous = web.get("/json/users/me")
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "UNAUTHORIZED"
    # No Basic challenge: the browser must not pop up its own password dialog.
    assert anonymous.headers.get("www-authenticate") == "Session"
    log_in(web, realm.hamlet)
    me = web.get("/json/users/me")
    assert me.status_code == 200
    body = me.json()
    assert body["result"] == "success" and body["user_id"] == realm.hamlet.id


def test_api_key_auth_stays_on_api_v1(web: TestClient, realm: SeededRealm) -> None:
    log_in(web, realm.hamlet)
    # The cookie is no credential for /api/v1.
    assert web.get("/api/v1/users/me").status_code == 401


def test_writes_need_the_csrf_header(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    data = {"type": "private", "to": f"[{realm.othello.id}]", "content": "hello"}
    missing = web.post("/json/messages", data=data)
    assert missing.status_code == 403
    expected = {"result": "error", "msg": "CSRF error: CSRF token missing.", "code": "CSRF_FAILED"}
    assert missing.json() == expected
    wrong = web.post("/json/messages", data=data, headers={"X-CSRFToken": "x" * 43})
    assert wrong.status_code == 403 and wrong.json()["code"] == "CSRF_FAILED"
    sent = web.post("/json/messages", data=data, headers={"X-CSRFToken": csrf})
    assert sent.status_code == 200, sent.text
    assert sent.json()["result"] == "success" and "id" in sent.json()


@pytest.mark.parametrize("method", ["PATCH", "DELETE", "PUT"])
def test_every_unsafe_method_is_checked(web: TestClient, realm: SeededRealm, method: str) -> None:
    log_in(web, realm.hamlet)
    response = web.request(method, "/json/users/me/status", data={"status_text": "x"})
    assert response.status_code in (403, 405)
    if response.status_code == 403:
        assert response.json()["code"] == "CSRF_FAILED"


def test_same_parameters_and_responses_as_the_api(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    registered = web.post(
        "/json/register", data={"event_types": '["message"]'}, headers={"X-CSRFToken": csrf}
    )
    assert registered.status_code == 200, registered.text
    queue_id = registered.json()["queue_id"]
    bad = web.get("/json/messages", params={"anchor": "newest", "num_before": "x"})
    assert bad.status_code == 400 and bad.json()["result"] == "error"
    # The long-poll returns at once when an event is waiting.
    web.post(
        "/json/messages",
        data={"type": "private", "to": f"[{realm.othello.id}]", "content": "ping"},
        headers={"X-CSRFToken": csrf},
    )
    events = web.get("/json/events", params={"queue_id": queue_id, "last_event_id": "-1"})
    assert events.status_code == 200, events.text
    assert any(e["type"] == "message" for e in events.json()["events"])


def test_unknown_json_path_is_a_json_404(web: TestClient) -> None:
    response = web.get("/json/no/such/endpoint")
    assert response.status_code == 404
    assert response.json()["result"] == "error"


def test_fetch_api_key_under_json(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    response = web.post(
        "/json/fetch_api_key",
        data={"username": realm.hamlet.email, "password": "secret-password"},
        headers={"X-CSRFToken": csrf},
    )
    assert response.status_code == 200, response.text
    assert response.json()["api_key"] == realm.hamlet.api_key
    # Anonymous calls work as on /api/v1 (auth="none").
    web.cookies.clear()
    anonymous = web.post("/json/fetch_api_key", data={"username": realm.hamlet.email, "password": "wrong"})
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "AUTHENTICATION_FAILED"


def test_session_of_another_realm_is_not_accepted(
    web: TestClient, realm: SeededRealm, client: TestClient
) -> None:
    from tests.helpers import seed_realm

    log_in(web, realm.hamlet)
    other = seed_realm(client.app.state.services)  # type: ignore[attr-defined]
    response = web.get("/json/users/me", headers={"host": other.host})
    assert response.status_code == 401


def test_uploaded_files_open_with_the_cookie(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    uploaded = web.post(
        "/json/user_uploads",
        files={"filename": ("note.txt", b"hello from the browser", "text/plain")},
        headers={"X-CSRFToken": csrf},
    )
    assert uploaded.status_code == 200, uploaded.text
    url = uploaded.json()["url"]
    served = web.get(url)
    assert served.status_code == 200
    assert served.content == b"hello from the browser"
    web.cookies.clear()
    assert web.get(url).status_code == 401


def test_cross_site_writes_are_refused_before_the_token(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    data = {"type": "private", "to": f"[{realm.othello.id}]", "content": "from elsewhere?"}
    own = f"http://{realm.host}"
    refused = {
        "Sec-Fetch-Site": {"Sec-Fetch-Site": "cross-site"},
        # Another organization of the same server is the same site, another origin.
        "same-site": {"Sec-Fetch-Site": "same-site"},
        "Origin": {"Origin": "https://evil.example"},
        "other realm": {"Origin": f"http://other.{realm.host}"},
        "null": {"Origin": "null"},
    }
    for name, headers in refused.items():
        response = web.post("/json/messages", data=data, headers={"X-CSRFToken": csrf, **headers})
        assert response.status_code == 403, name
        body = response.json()
        assert body["code"] == "CSRF_FAILED" and "cross-site request refused" in body["msg"], body
    for headers in (
        {"Origin": own, "Sec-Fetch-Site": "same-origin"},
        {"Origin": own.upper()},
        {"Sec-Fetch-Site": "none"},
        {},  # an API library, an older browser: the token alone decides
    ):
        sent = web.post("/json/messages", data=data, headers={"X-CSRFToken": csrf, **headers})
        assert sent.status_code == 200, (headers, sent.text)
    # Reads are not writes: a cross-site GET is judged as before.
    assert web.get("/json/users/me", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


def test_api_answers_are_not_stored(web: TestClient, realm: SeededRealm) -> None:
    log_in(web, realm.hamlet)
    for response in (
        web.get("/json/users/me"),
        web.get("/json/no/such/endpoint"),
        web.get("/api/v1/users/me"),  # 401, an error envelope
    ):
        assert response.headers["cache-control"] == "private, no-store", response.url
