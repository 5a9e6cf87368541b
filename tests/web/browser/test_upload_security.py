"""Hostile uploads opened in real Chromium, signed in: no script runs on the organization's origin.

Each payload of tests/security/hostile_uploads.py carries a script that, if it runs, sets a
``pwned`` cookie and POSTs to ``/json/messages`` with the session. A member opens every
served URL of every payload (the file itself, its temporary URL, and its thumbnail URL) in
the tab where they are signed in; neither the cookie nor the request may ever appear. A
control page served with the same script as ``text/html`` on the same origin shows the probe
does see a script that runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.images import image_bytes
from tests.security.hostile_uploads import Hostile, hostile_uploads, script
from tests.web.browser.client import channel_id, log_in, send, topic_hash, unique
from tests.web.conftest import LiveServer, start_live_server, wait_for

# How long a page is given to run a script after it has loaded.
SETTLE_SECONDS = 0.3


def _upload(live_server: LiveServer, hostile: Hostile) -> list[str]:
    """The URLs a member may open for the payload: file, temporary URL, thumbnail URL."""
    with live_server.api("hamlet") as api:
        response = api.post(
            "/user_uploads", files={"file": (hostile.file_name, hostile.data, hostile.declared)}
        )
        response.raise_for_status()
        url = str(response.json()["url"])
        path = url.removeprefix("/user_uploads/")
        temporary = api.get(f"/user_uploads/{path}")
        temporary.raise_for_status()
    thumbnail = f"/user_uploads/thumbnail/{path}/840x560.webp"
    return [url, str(temporary.json()["url"]), thumbnail]


def _open(page: Any, url: str) -> None:
    try:
        page.goto(url, wait_until="load")
    except Exception as error:
        # An attachment starts a download instead of a page: Chromium aborts the navigation.
        if "Download is starting" not in str(error) and "ERR_ABORTED" not in str(error):
            raise
    time.sleep(SETTLE_SECONDS)


def _marks(context: Any) -> set[str]:
    return {c["value"] for c in context.cookies() if c["name"] == "pwned"}


def test_no_upload_runs_script_on_the_organizations_origin(live_server: LiveServer, new_page: Any) -> None:
    page = log_in(live_server, new_page(accept_downloads=True), "hamlet")
    context = page.context
    posted: list[str] = []

    def record(route: Any) -> None:
        # Noted and refused, so a payload that ran could not write to the shared server.
        if route.request.method == "POST":
            posted.append(route.request.post_data or "")
        route.abort()

    context.route("**/json/messages", record)

    # The probe sees a script that runs: the same script, served as a page of this origin.
    control = f"<!doctype html><script>{script('control')}</script>"
    context.route(
        "**/probe-control", lambda route: route.fulfill(status=200, content_type="text/html", body=control)
    )
    _open(page, f"{live_server.url}/probe-control")
    deadline = time.monotonic() + 5
    while not posted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _marks(context) == {"control"}
    assert posted and "pwned+control" in posted[0]
    context.clear_cookies(name="pwned")
    posted.clear()

    opened = 0
    for hostile in hostile_uploads():
        for url in _upload(live_server, hostile):
            _open(page, live_server.url + url)
            opened += 1
            assert _marks(context) == set(), (hostile.mark, url)
            assert posted == [], (hostile.mark, url)
    assert opened == 3 * len(hostile_uploads())


def test_an_uploaded_image_shows_its_thumbnail_with_the_session_cookie(
    live_server: LiveServer, app_page: Any
) -> None:
    """The web client's <img> sends only the session cookie: the thumbnail must load with it."""
    general = channel_id(live_server, "othello", "general")
    topic = unique("picture")
    with live_server.api("hamlet") as api:
        response = api.post(
            "/user_uploads", files={"file": ("photo.png", image_bytes(900, 600), "image/png")}
        )
        response.raise_for_status()
        url = str(response.json()["url"])
    send(live_server, "hamlet", "general", topic, f"[photo.png]({url})")
    page = app_page("othello", topic_hash(general, topic))
    # The placeholder first, then (the server's thumbnail worker done) the thumbnail, drawn.
    loaded = (
        "() => [...document.querySelectorAll('article.message img')].some(img => "
        "img.src.includes('/user_uploads/thumbnail/') && img.complete && img.naturalWidth === 840)"
    )
    wait_for(page, loaded, timeout=20)
    status = page.evaluate(
        "src => fetch(src, {credentials: 'same-origin'}).then(r => r.status)",
        page.evaluate("() => document.querySelector('article.message img').src"),
    )
    assert status == 200


@pytest.fixture(scope="module")
def content_apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose uploads are served from a second origin (``localhost`` beside the
    organization's ``127.0.0.1``, same port: the same server answers both)."""
    server = start_live_server(
        tmp_path_factory.mktemp("user-content-origin"), user_content_url="http://localhost:{port}"
    )
    try:
        yield server
    finally:
        server.stop()


def test_with_a_user_content_origin_files_open_there_and_pictures_still_show(
    content_apart: LiveServer, new_page: Any
) -> None:
    server = content_apart
    content_origin = f"http://localhost:{server.port}"
    general = channel_id(server, "othello", "general")
    topic = unique("apart")
    svg = next(h for h in hostile_uploads() if h.mark == "svg")
    with server.api("hamlet") as api:
        urls = []
        for name, data, declared in (
            ("photo.png", image_bytes(900, 600), "image/png"),
            (svg.file_name, svg.data, svg.declared),
        ):
            response = api.post("/user_uploads", files={"file": (name, data, declared)})
            response.raise_for_status()
            urls.append(str(response.json()["url"]))
    photo, drawing = urls
    send(server, "hamlet", "general", topic, f"[photo.png]({photo}) [drawing]({drawing})")
    page = log_in(server, new_page(accept_downloads=True), "othello", topic_hash(general, topic))
    # The thumbnail's <img> follows the redirect to the other origin (the page's CSP allows it).
    wait_for(
        page,
        "() => [...document.querySelectorAll('article.message img')].some(img => "
        "img.src.includes('/user_uploads/thumbnail/') && img.complete && img.naturalWidth === 840)",
        timeout=20,
    )
    posted: list[str] = []

    def record(route: Any) -> None:
        posted.append(route.request.method)
        route.abort()

    page.context.route("**/json/messages", record)
    # Opened, the picture is shown from the user-content origin, by a signed URL, laid out
    # by the browser's image viewer without a CSP violation.
    console: list[str] = []
    page.on("console", lambda entry: console.append(entry.text))
    _open(page, server.url + photo)
    assert page.url.startswith(f"{content_origin}/user_uploads/temporary/"), page.url
    assert page.evaluate("() => document.querySelector('img').naturalWidth") == 900
    assert not [text for text in console if "Content Security Policy" in text]
    _open(page, server.url + drawing)
    assert _marks(page.context) == set() and posted == []
