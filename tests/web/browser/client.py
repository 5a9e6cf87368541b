"""Helpers for driving the web client in the browser tests."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.web.conftest import LiveServer


def log_in(live_server: LiveServer, page: Any, name: str, hash_: str = "") -> Any:
    """Sign in through the login form and wait until the app has registered."""
    email, password, _ = live_server.users[name]
    page.goto(live_server.url + "/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    wait_for(page, "window.palaver && window.palaver.state !== null")
    if hash_:
        go(page, hash_)
    return page


def wait_for(page: Any, script: str, arg: Any = None, timeout: float = 10.0) -> Any:
    """Polls ``script`` until it is truthy. (Playwright's wait_for_function compiles its
    predicate with eval, which the app's Content-Security-Policy rightly refuses.)"""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(script, arg)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {script} ({arg!r})")
        time.sleep(0.02)


def go(page: Any, hash_: str) -> None:
    page.evaluate("hash => { window.location.hash = hash; }", hash_)
    wait_for(page, "hash => decodeURIComponent(location.hash) === decodeURIComponent(hash)", arg=hash_)
    wait_for(page, "document.getElementById('feed-scroller').getAttribute('aria-busy') !== 'true'")


def unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def channel_id(live_server: LiveServer, name: str, channel: str) -> int:
    """The channel's id, subscribing the user first if needed."""
    with live_server.api(name) as api:
        api.post(
            "/users/me/subscriptions", data={"subscriptions": f'[{{"name": "{channel}"}}]'}
        ).raise_for_status()
        response = api.get("/get_stream_id", params={"stream": channel})
        response.raise_for_status()
        return int(response.json()["stream_id"])


def topic_hash(stream_id: int, topic: str) -> str:
    encoded = (
        "".join(c if c.isalnum() else "." + format(ord(c), "02X") for c in topic)
        if topic.isascii()
        else topic
    )
    return f"#narrow/channel/{stream_id}/topic/{encoded}"


def send(live_server: LiveServer, name: str, stream: str, topic: str, content: str) -> int:
    with live_server.api(name) as api:
        response = api.post(
            "/messages", data={"type": "stream", "to": stream, "topic": topic, "content": content}
        )
        response.raise_for_status()
        return int(response.json()["id"])
