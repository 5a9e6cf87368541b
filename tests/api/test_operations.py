"""Operating the server: probes, metrics, request IDs, body/header limits, proxies, UTF-8."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Message, Receive, Scope, Send

from palaver.api.middleware import RequestMiddleware
from palaver.app import create_app
from palaver.config import Settings
from palaver.services import Services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, basic_auth, seed_realm


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_health_needs_no_login(client: TestClient) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    ready = client.get("/health/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["database"] == "ok"


def test_ready_is_503_when_redis_is_unreachable(tmp_path: Path, database_url: str) -> None:
    # Nothing listens on port 1; the probe fails fast.
    settings = make_test_settings(database_url, tmp_path, redis_url="redis://127.0.0.1:1/0")
    with TestClient(create_app(settings)) as client:
        response = client.get("/health/ready")
        assert response.status_code == 503
        body = response.json()
        assert body["result"] == "error"
        assert body["checks"]["redis"].startswith("unreachable")
        assert body["checks"]["database"] == "ok"
        assert response.headers["Retry-After"] == "5"
        assert body["retry-after"] == 5


def test_metrics_parse_and_count_by_route_template(api: Api, realm: SeededRealm) -> None:
    before = _samples(api.client.get("/metrics").text)
    assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}"))
    sent = api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "hi"})
    assert_json_success(sent)
    response = api.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)
    key = (
        "palaver_http_requests_total",
        (("method", "GET"), ("route", "/api/v1/users/{user_id_or_email}"), ("status", "200")),
    )
    assert after[key] == before.get(key, 0) + 1
    messages = ("palaver_messages_sent_total", ())
    assert after[messages] == before.get(messages, 0) + 1
    # Pages, files and /json answer under their route templates too; only what no route
    # matched is "unmatched".
    paths = ("/", "/openapi.json", "/json/users/me", f"/user_uploads/{realm.id}/ab/c/d.txt", "/no/such")
    statuses = [api.client.get(path, headers={"host": realm.host}).status_code for path in paths]
    assert statuses[2:] == [401, statuses[3], 404] and statuses[3] in (401, 403, 404)
    counted = _samples(api.client.get("/metrics").text)

    def count(route: str, status: str) -> float:
        sample = ("palaver_http_requests_total", (("method", "GET"), ("route", route), ("status", status)))
        return counted.get(sample, 0) - after.get(sample, 0)

    assert count("/", "200") == 1
    assert count("/openapi.json", "200") == 1
    assert count("/json/users/me", "401") == 1
    assert count("/user_uploads/{realm_id:int}/{path:path}", str(statuses[3])) == 1
    assert count("unmatched", "404") == 1
    names = {name for name, _ in after}
    for expected in (
        "palaver_http_request_duration_seconds_bucket",
        "palaver_events_published_total",
        "palaver_event_parked_polls",
        "palaver_event_queues",
        "palaver_db_connections_in_use",
    ):
        assert expected in names, expected


def test_request_ids(api: Api, realm: SeededRealm) -> None:
    generated = api.get(realm.hamlet, "users/me")
    assert len(generated.headers["X-Request-Id"]) == 16
    ids = {api.get(realm.hamlet, "users/me").headers["X-Request-Id"] for _ in range(20)}
    assert len(ids) == 20 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    kept = api.get(realm.hamlet, "users/me", headers={"X-Request-Id": "lb-4f2a.77"})
    assert kept.headers["X-Request-Id"] == "lb-4f2a.77"
    replaced = api.get(realm.hamlet, "users/me", headers={"X-Request-Id": "bad id\twith spaces"})
    assert replaced.headers["X-Request-Id"] != "bad id\twith spaces"


def test_access_log_has_request_id_user_and_route(
    api: Api, realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="palaver.access"):
        response = api.get(realm.hamlet, "users/me", headers={"X-Request-Id": "trace-me"})
    # The access log's fields are the records' extra attributes.
    records = [
        r.__dict__
        for r in caplog.records
        if r.name == "palaver.access" and r.__dict__.get("request_id") == "trace-me"
    ]
    assert len(records) == 1
    record = records[0]
    assert response.status_code == 200
    assert (record["route"], record["status"], record["user_id"]) == (
        "/api/v1/users/me",
        200,
        realm.hamlet.id,
    )
    assert record["duration_ms"] >= 0


def test_json_log_format() -> None:
    from palaver.lib.logs import JsonFormatter

    record = logging.LogRecord("palaver.access", logging.INFO, "", 0, "GET %s", ("/x",), None)
    record.request_id = "abc"
    record.status = 200
    import json

    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "GET /x"
    assert (line["request_id"], line["status"], line["level"]) == ("abc", 200, "info")
    assert line["ts"].endswith("+00:00")


def test_body_over_the_limit_is_413(api: Api, realm: SeededRealm) -> None:
    content = "a" * (1024 * 1024 + 10)
    response = api.post(
        realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": content}
    )
    assert_json_error(response, "Request body too large (the limit is 1 MiB)", status=413)


def test_body_limit_is_enforced_while_streaming(api: Api, realm: SeededRealm) -> None:
    def chunks() -> Iterator[bytes]:
        # No Content-Length: the limit must stop it as it arrives.
        yield b"type=stream&to=Verona&topic=t&content="
        for _ in range(300):
            yield b"a" * 4096

    response = api.client.post(
        "/api/v1/messages",
        content=chunks(),
        headers={
            "host": realm.host,
            "authorization": basic_auth(realm.hamlet),
            "content-type": "application/x-www-form-urlencoded",
        },
    )
    assert_json_error(response, "Request body too large (the limit is 1 MiB)", status=413)


def test_uploads_have_their_own_limit(tmp_path: Path, database_url: str) -> None:
    settings = make_test_settings(database_url, tmp_path, max_file_upload_size_mib=1, max_request_body_kib=8)
    app = create_app(settings)
    with TestClient(app) as client:
        realm = seed_realm(app.state.services)
        api = Api(client, realm)
        small_form = api.post(realm.hamlet, "users/me/presence", {"status": "active", "pad": "x" * 9000})
        assert_json_error(small_form, "Request body too large (the limit is 8 KiB)", status=413)
        upload = api.post(realm.hamlet, "user_uploads", files={"file": ("a.bin", b"x" * 20000)})
        assert_json_success(upload)
        too_big = api.post(
            realm.hamlet, "user_uploads", files={"file": ("b.bin", b"x" * (1024 * 1024 + 70000))}
        )
        assert too_big.status_code == 413


def test_invalid_utf8_in_multipart_is_400(api: Api, realm: SeededRealm) -> None:
    boundary = "XyZ"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="status"\r\n\r\n'.encode()
        + b"\xff\xfeactive\r\n"
        + f"--{boundary}--\r\n".encode()
    )
    response = api.client.post(
        "/api/v1/users/me/presence",
        content=body,
        headers={
            "host": realm.host,
            "authorization": basic_auth(realm.hamlet),
            "content-type": f"multipart/form-data; boundary={boundary}",
        },
    )
    assert_json_error(response, "Malformed request body")


def test_forwarded_headers_count_only_from_trusted_proxies(
    tmp_path: Path, database_url: str, services: Services
) -> None:
    from palaver.api.middleware import RequestMiddleware

    def client_ip(trusted: list[str], peer: str, forwarded: str) -> tuple[str, str]:
        settings = make_test_settings(database_url, tmp_path, trusted_proxies=trusted)
        middleware = RequestMiddleware(lambda *a: None, settings, {})  # type: ignore[arg-type]
        scope = {
            "client": (peer, 5000),
            "scheme": "http",
            "headers": [(b"x-forwarded-for", forwarded.encode()), (b"x-forwarded-proto", b"https")],
        }
        if middleware.proxies:
            middleware._apply_forwarded(scope, scope["headers"])  # type: ignore[arg-type]
        client, scheme = scope["client"], scope["scheme"]
        assert isinstance(client, tuple) and isinstance(scheme, str)
        return str(client[0]), scheme

    spoofed = "6.6.6.6, 203.0.113.9"
    assert client_ip([], "127.0.0.1", spoofed) == ("127.0.0.1", "http")
    assert client_ip(["10.0.0.0/8"], "127.0.0.1", spoofed) == ("127.0.0.1", "http")
    assert client_ip(["127.0.0.1/32"], "127.0.0.1", spoofed) == ("203.0.113.9", "https")
    # Two proxies in a row: the client is the first address neither of them added.
    assert client_ip(["127.0.0.1", "10.0.0.0/8"], "127.0.0.1", "6.6.6.6, 203.0.113.9, 10.1.2.3") == (
        "203.0.113.9",
        "https",
    )


def test_trusted_proxies_setting_is_validated(tmp_path: Path) -> None:
    from palaver.config import ConfigError, load_settings

    settings = load_settings(env={"PALAVER_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"}, data_dir=str(tmp_path))
    assert settings.trusted_proxies == ["10.0.0.0/8", "127.0.0.1"]
    with pytest.raises(ConfigError, match="trusted_proxies"):
        load_settings(env={"PALAVER_TRUSTED_PROXIES": "not-an-ip"})


def test_settings_defaults_are_small(settings: Settings) -> None:
    assert settings.max_request_body_kib == 1024
    assert settings.trusted_proxies == []


def test_request_series_are_counted_past_the_remembered_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from palaver.lib import metrics
    from palaver.lib.metrics import RequestRecorder

    monkeypatch.setattr(RequestRecorder, "MAX_SERIES", 1)
    recorder = RequestRecorder()

    def count(method: str) -> float:
        return metrics.REQUESTS.labels(method, "/test/series", "200")._value.get()  # type: ignore[no-any-return]

    before = [count(m) for m in ("SERIESA", "SERIESB")]
    for _ in range(3):
        recorder.record("SERIESA", "/test/series", 200, 0.01)
        recorder.record("SERIESB", "/test/series", 200, 0.01)
    assert [count(m) for m in ("SERIESA", "SERIESB")] == [before[0] + 3, before[1] + 3]


def _through_guard(
    settings: Settings, headers: list[tuple[bytes, bytes]], body: bytes
) -> tuple[bool | None, int]:
    """Whether the app behind ``RequestMiddleware`` got the server's own ``receive`` (None: not
    called), and the status answered."""
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    unwrapped: list[bool] = []
    statuses: list[int] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def app(scope: Scope, inner_receive: Receive, inner_send: Send) -> None:
        unwrapped.append(inner_receive is receive)
        await inner_receive()
        await inner_send({"type": "http.response.start", "status": 200, "headers": []})
        await inner_send({"type": "http.response.body", "body": b""})

    scope: Scope = {"type": "http", "method": "GET", "path": "/x", "headers": headers, "query_string": b""}
    asyncio.run(RequestMiddleware(app, settings)(scope, receive, send))
    return (unwrapped[0] if unwrapped else None), statuses[0]


def test_body_guard_wraps_only_a_request_that_declares_a_body(tmp_path: Path, database_url: str) -> None:
    settings = make_test_settings(database_url, tmp_path, max_request_body_kib=1)
    # Neither framing header: no body, so the server's receive goes through as it is.
    assert _through_guard(settings, [(b"host", b"h")], b"") == (True, 200)
    # Either framing header: guarded, and the limit holds while the body streams in.
    assert _through_guard(settings, [(b"content-length", b"3")], b"abc") == (False, 200)
    assert _through_guard(settings, [(b"transfer-encoding", b"chunked")], b"abc") == (False, 200)
    assert _through_guard(settings, [(b"transfer-encoding", b"chunked")], b"a" * 2048) == (False, 413)
    assert _through_guard(settings, [(b"content-length", b"2048")], b"a" * 2048) == (None, 413)
