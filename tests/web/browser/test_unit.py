"""The web client's unit tests (tests/web/browser/unit_tests.js), run in Chromium.

The page and the app's modules are served to the browser by Playwright's request routing
from the source tree, so no server and no Node.js are involved.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.web.conftest import wait_for

ROOT = Path(__file__).resolve().parents[3]
STATIC = ROOT / "src" / "palaver" / "web" / "static"
TESTS = Path(__file__).resolve().parent
ORIGIN = "http://palaver-unit.test"


def _serve(route: Any) -> None:
    url = urlsplit(route.request.url)
    path = url.path
    if path == "/json/unit/list":
        # For api.getInSlices (fetched from its worker): ``n`` numbered items and a head.
        n = int(parse_qs(url.query)["n"][0])
        body = {"result": "success", "msg": "", "items": [{"n": i} for i in range(n)], "total": n}
        route.fulfill(status=200, json=body)
        return
    if path.startswith("/json/"):
        route.fulfill(status=404, json={"result": "error", "msg": "No such list", "code": "BAD_REQUEST"})
        return
    if path.startswith("/static/"):
        file = STATIC / path.removeprefix("/static/")
    elif path.startswith("/tests/"):
        file = TESTS / path.removeprefix("/tests/")
    else:
        route.fulfill(status=404, body="not found")
        return
    if not file.is_file():
        route.fulfill(status=404, body="not found")
        return
    media = "text/javascript" if file.suffix == ".js" else mimetypes.guess_type(file.name)[0] or "text/plain"
    route.fulfill(status=200, body=file.read_bytes(), headers={"Content-Type": media})


def test_client_unit_tests(new_page: Any) -> None:
    page = new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route(f"{ORIGIN}/**", _serve)
    page.goto(f"{ORIGIN}/tests/unit.html")
    wait_for(page, "() => window.unitResults !== undefined")
    results = page.evaluate("window.unitResults")
    assert not errors, errors
    failures = [f"{r['name']}: {r['error']}" for r in results if not r["ok"]]
    assert not failures, "\n".join(failures)
    assert len(results) >= 30, len(results)
