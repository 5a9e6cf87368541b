"""Helpers for driving the web client in the browser tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tests.web.conftest import LiveServer, wait_for

# True once the app has loaded and registered its event queue.
APP_READY = "window.palaver && window.palaver.state !== null"


def log_in(live_server: LiveServer, page: Any, name: str, hash_: str = "") -> Any:
    """Sign in through the login form and wait until the app has registered."""
    email, password, _ = live_server.users[name]
    page.goto(live_server.url + "/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    wait_for(page, APP_READY)
    if hash_:
        go(page, hash_)
    return page


class SignedIn:
    """One browser context per person, signed in through the login form once, from which
    each test opens pages of its own (``app_page`` in ``tests/web/conftest.py``).

    A fresh context signed in through the form costs Chromium a login page and the app's
    first load with an empty cache: 1.2-1.6 CPU-s in the full browser, ~0.25 in the headless
    shell the tests run (plus the server's login). A new page in a context already signed in
    costs 0.3-1.5 and ~0.2 CPU-s, and the browser tests open ~15 of them. What a test's
    page holds (its scripts' state, handlers, sessionStorage) ends with the page; the
    context keeps only the session cookie, the HTTP cache and localStorage (where the app
    notes only that it asked for notification permission: the notification test has a
    context of its own). A test that fails has its people's contexts discarded, so the next
    one signs in afresh.
    """

    def __init__(self, browser: Any, live_server: LiveServer) -> None:
        self.browser = browser
        self.live_server = live_server
        self.contexts: dict[str, Any] = {}

    def page(
        self,
        name: str,
        hash_: str = "",
        *,
        viewport: dict[str, int] | None = None,
        color_scheme: str | None = None,
        on_error: Callable[[Any], None] | None = None,
    ) -> Any:
        """A new page of ``name``'s showing the app, emulating the viewport or color scheme
        given from its first load, at ``hash_`` once loaded (as ``log_in`` leaves it);
        ``on_error`` hears of every exception the page's scripts leave uncaught."""
        context = self.contexts.get(name)
        if context is None:
            context = self.contexts[name] = self.browser.new_context()
            context.set_default_timeout(10_000)
            log_in(self.live_server, context.new_page(), name).close()
        page = context.new_page()
        if on_error is not None:
            page.on("pageerror", on_error)
        if viewport is not None:
            page.set_viewport_size(viewport)
        if color_scheme is not None:
            page.emulate_media(color_scheme=color_scheme)
        # Opened at the hash itself: the home view, shown first, would mark messages read.
        page.goto(self.live_server.url + "/" + hash_)
        wait_for(page, APP_READY)
        if hash_:
            go(page, hash_)
        return page

    def discard(self, name: str) -> None:
        """Close ``name``'s context: the next page for them comes from a new sign-in."""
        context = self.contexts.pop(name, None)
        if context is not None:
            context.close()

    def close(self) -> None:
        for name in list(self.contexts):
            self.discard(name)


def go(page: Any, hash_: str) -> None:
    page.evaluate("hash => { window.location.hash = hash; }", hash_)
    wait_for(page, "hash => decodeURIComponent(location.hash) === decodeURIComponent(hash)", arg=hash_)
    wait_routed(page)


def wait_routed(page: Any) -> None:
    """Wait until the page shows the view its URL names: routed, and its feed loaded.

    The hash changes before the app's hashchange handler runs; until then the feed still
    shows the previous view and is not busy."""
    wait_for(page, "window.palaver.routedHash === location.hash")
    wait_for(page, "document.getElementById('feed-scroller').getAttribute('aria-busy') !== 'true'")


def open_section(page: Any, tab: str) -> Any:
    """Open the settings tab ``tab`` and return its panel once its heading shows."""
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("tab", name=tab).click()
    panel = page.locator("#settings-panel")
    panel.get_by_role("heading", name=tab, level=2).wait_for()
    return panel


def accept_dialogs(page: Any) -> None:
    """Answer every confirm() and alert() of the page with OK."""
    page.on("dialog", lambda dialog: dialog.accept())


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
