"""The web client inside Zulip's desktop app: the unread count reaches the app.

The desktop app (zulip/zulip-desktop) reads the count from the page title, ``(N) …``, and
its preload script exposes ``window.electron_bridge``, whose ``total_unread_count`` event
sets the tray and dock badge (``app/renderer/js/electron-bridge.ts``). Here a stand-in
bridge records what the page sends, as the app's would receive it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.web.browser.client import log_in, unique
from tests.web.conftest import LiveServer, wait_for

NewPage = Callable[..., Any]


def test_unread_count_reaches_the_desktop_app(live_server: LiveServer, new_page: NewPage) -> None:
    page = new_page()
    page.add_init_script(
        """
        window.bridged = [];
        window.electron_bridge = {
          send_event: (name, ...args) => { window.bridged.push([name, ...args]); return true; },
        };
        """
    )
    log_in(live_server, page, "othello")
    othello_id = page.evaluate("window.palaver.state.myId")
    with live_server.api("iago") as api:
        dm = {"type": "direct", "to": f"[{othello_id}]", "content": unique("for the desktop app")}
        api.post("/messages", data=dm).raise_for_status()
    count = wait_for(
        page,
        "(() => { const c = window.bridged.filter(e => e[0] === 'total_unread_count').map(e => e[1]);"
        " return c.length && c[c.length - 1] > 0 && c[c.length - 1]; })()",
    )
    title = page.title()
    assert title.startswith(f"({count}) "), title
    with live_server.api("othello") as api:
        api.post("/mark_all_as_read").raise_for_status()
