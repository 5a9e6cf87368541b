"""Imported history in the web client: a Slack export, imported with ``palaver import-from``,
read in a real Chromium by one of its people (times, senders, avatars, threads as topics,
mentions, files that open)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.importers.conftest import FileServer, file_server
from tests.importers.slack_export import NOTES, export
from tests.servers import clean_environment, free_port
from tests.web.browser.client import go, log_in, topic_hash
from tests.web.conftest import PASSWORD, LiveServer, close_page, wait_for

__all__ = ["file_server"]
NewPage = Callable[..., Any]


def _palaver(env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "palaver.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_imported_slack_history_reads_in_the_browser(
    tmp_path: Path, file_server: FileServer, new_page: NewPage
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    values = {
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'palaver.db'}",
        "EXTERNAL_URL": url,
        "ROOT_REALM_STRING_ID": "",
        "PASSWORD_TIME_COST": "1",
        "PASSWORD_MEMORY_COST_KIB": "8",
        "CREATE_DEMO_REALM": "false",
        "LOG_LEVEL": "warning",
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    env = clean_environment(**{f"PALAVER_{k}": v for k, v in values.items()})
    _palaver(env, "migrate")
    archive = export(tmp_path / "slack", file_server)
    # The organization on the bare host, so the browser reaches it at 127.0.0.1.
    _palaver(
        env, "import-from", "slack", str(archive), "--string-id", "", "--files-base-url", file_server.url
    )
    _palaver(
        env, "reset-password", "--realm", "", "--email", "bob@example.com", "--password-stdin", stdin=PASSWORD
    )
    server = LiveServer(
        url,
        port,
        tmp_path / "data",
        env,
        tmp_path / "server.log",
        users={"bob": ("bob@example.com", PASSWORD, "")},
    )
    server.start()
    page = None
    try:
        page = log_in(server, new_page(), "bob")
        stream_id = page.evaluate(
            "async () => (await (await fetch('/json/get_stream_id?stream=general')).json()).stream_id"
        )
        go(page, topic_hash(stream_id, "2024-01-02 Slack thread 1"))
        wait_for(page, "() => document.body.innerText.includes('Also sent to the channel')", timeout=20)
        text = page.evaluate("() => document.body.innerText")
        # The thread's messages, their senders and the mention, in order.
        assert (
            text.index("Question for")
            < text.index("Answer in the thread")
            < text.index("Also sent to the channel")
        )
        for sender in ("Zoë Ångström", "Ada Lovelace", "Bob Builder"):
            assert sender in text
        assert page.locator(".user-mention", has_text="@Ada Lovelace").count() >= 1
        # Each sender's avatar; the times Slack recorded (2 January 2024, 10:00:02 UTC on);
        # the edited reply marked.
        assert page.locator(".avatar-button").count() == 3
        times = page.evaluate("() => [...document.querySelectorAll('time[datetime]')].map((t) => t.dateTime)")
        assert times == ["2024-01-02T10:00:02.000Z", "2024-01-02T10:00:03.000Z", "2024-01-02T10:00:04.000Z"]
        assert page.locator(".edited", has_text="(edited)").count() == 1
        go(page, topic_hash(stream_id, "imported from Slack"))
        wait_for(
            page,
            "() => [...document.querySelectorAll('a')].some((a) => a.textContent === 'notes.txt')",
            timeout=20,
        )
        href = page.evaluate(
            "() => [...document.querySelectorAll('a')].find((a) => a.textContent === 'notes.txt').href"
        )
        body = page.evaluate("async (href) => await (await fetch(href)).text()", href)
        assert body == NOTES.decode()
    finally:
        # Closed while its server still answers: a page whose server went away retries and
        # navigates by itself, and Chromium's close in the middle of that can wait forever.
        if page is not None:
            close_page(page)
        server.stop()
