"""Slow and oversized clients against a real ``palaver serve``: sockets are not held, limits
answer in the error envelope, a client that hangs up leaves no traceback; and ``/metrics``
adds up the samples of several worker processes."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_events_e2e import REDIS_URL
from tests.e2e.test_restart_e2e import Restartable, restartable  # noqa: F401 (fixture)
from tests.helpers import require_redis
from tests.servers import http_get

pytestmark = pytest.mark.e2e


def _limited_server(make: Callable[..., Restartable], **kw: object) -> Restartable:
    server = make(**kw)
    original = server.env

    def env() -> dict[str, str]:
        values = original()
        values.update(
            PALAVER_REQUEST_HEADER_TIMEOUT_SECONDS="1",
            PALAVER_REQUEST_BODY_TIMEOUT_SECONDS="1",
            PALAVER_MAX_REQUEST_BODY_KIB="64",
        )
        return values

    server.env = env  # type: ignore[method-assign]
    server.start()
    return server


def _exchange(port: int, data: bytes, *, then: bytes = b"", pause: float = 0, wait: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(data)
        if pause:
            time.sleep(pause)
            with contextlib.suppress(OSError):
                sock.sendall(then)
        sock.settimeout(wait)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return received


def test_slow_and_oversized_clients(restartable: Callable[..., Restartable]) -> None:  # noqa: F811
    server = _limited_server(restartable)
    assert server.server is not None
    port = server.port

    head = (
        b"POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n"
    )
    # Three stalled clients at once (each waits out a 1 s timeout; together, not one by one).
    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        # Slowloris: a request head trickling in is cut off after the header timeout.
        slowloris = pool.submit(
            _exchange, port, b"GET /health HTTP/1.1\r\nHost: x\r\n", then=b"X-A: 1\r\n", pause=0.5
        )
        # A connection that never sends anything is closed too.
        silent = pool.submit(_exchange, port, b"")
        # A body that stalls: 408 in the envelope, connection closed.
        stalled_body = pool.submit(_exchange, port, head + b"username=a", wait=5)
    assert slowloris.result().startswith(b"HTTP/1.1 408"), slowloris.result()
    assert silent.result().startswith(b"HTTP/1.1 408"), silent.result()
    answer = stalled_body.result()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"result":"error"' in answer
    assert time.monotonic() - started < 4

    # Oversized head: 431; oversized declared body: 413 before it is read.
    assert _exchange(
        port, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"
    ).startswith(b"HTTP/1.1 431")
    big = head.replace(b"Content-Length: 100", b"Content-Length: 30000000")
    started = time.monotonic()
    answer = _exchange(port, big)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert b"Request body too large (the limit is 64 KiB)" in answer
    # ... and the connection closed at once, not held open for the body it will not read.
    assert b"connection: close" in answer.lower()
    assert time.monotonic() - started < 4

    # A client hanging up mid-body: nothing to answer, and nothing but an access-log line.
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + b"user")
    time.sleep(0.5)

    # The server still answers, and logged no traceback for any of this.
    assert http_get(f"{server.url}/health", timeout=5).status_code == 200
    log = server.server.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert "Exception in ASGI application" not in log
    server.stop()


def test_metrics_add_up_across_worker_processes(restartable: Callable[..., Restartable]) -> None:  # noqa: F811
    require_redis(REDIS_URL)
    server = restartable(workers=2, redis_url=REDIS_URL)
    server.start()
    assert server.server is not None
    requests = 40
    for _ in range(requests):
        # A fresh connection each time, so both processes serve some.
        assert http_get(f"{server.url}/health", headers={"Connection": "close"}, timeout=5).status_code == 200
    text = http_get(f"{server.url}/metrics", timeout=10).text
    counted = 0.0
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        for sample in family.samples:
            if sample.name == "palaver_http_requests_total" and sample.labels["route"] == "/health":
                counted += sample.value
    assert counted >= requests
    assert {"palaver_http_requests", "palaver_event_parked_polls", "palaver_event_queues"} <= names
    directory = Path(server.env()["PALAVER_DATA_DIR"]) / "prometheus-multiproc"
    assert any(directory.iterdir())
    server.stop()


def test_json_logs_from_a_real_server(restartable: Callable[..., Restartable]) -> None:  # noqa: F811
    import json

    server = restartable()
    original = server.env

    def env() -> dict[str, str]:
        values = original()
        values["PALAVER_LOG_FORMAT"] = "json"
        return values

    server.env = env  # type: ignore[method-assign]
    server.start()
    assert server.server is not None
    response = http_get(
        f"{server.url}/api/v1/server_settings", headers={"X-Request-Id": "json-check"}, timeout=5
    )
    assert response.headers["X-Request-Id"] == "json-check"
    server.stop()
    entries = [
        json.loads(line) for line in server.server.log.read_text().splitlines() if line.startswith("{")
    ]
    assert entries, "no JSON log lines"
    access = [e for e in entries if e.get("request_id") == "json-check" and e["logger"] == "palaver.access"]
    assert len(access) == 1
    entry = access[0]
    assert (entry["route"], entry["status"], entry["method"]) == ("/api/v1/server_settings", 200, "GET")
    assert entry["ts"].endswith("+00:00") and entry["duration_ms"] >= 0
    # uvicorn's own lines come through the same formatter.
    assert any(e["logger"].startswith("uvicorn") for e in entries)
