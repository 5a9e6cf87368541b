"""Static assets: one content hash for the tree, immutable caching, gzip and brotli."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import brotli
import pytest
from starlette.applications import Starlette

from palaver.web.static import load_static_tree, static_routes
from tests.client import TestClient


def _css_url(client: TestClient) -> str:
    page = client.get("/", headers={"host": "nosuchrealm.palaver.test"})
    match = re.search(r'href="(/static/[0-9a-f]{16}/css/login\.css)"', page.text)
    assert match, page.text
    return match.group(1)


def test_login_page_links_hashed_css(client: TestClient) -> None:
    url = _css_url(client)
    response = client.get(url, headers={"accept-encoding": "identity"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/css; charset=utf-8"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["vary"] == "Accept-Encoding"
    assert "content-encoding" not in response.headers
    assert b".login-box" in response.content


@pytest.fixture
def tree_dir(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.js").write_text('import { x } from "./x.js";\n' + "console.log(x);\n" * 100)
    (tmp_path / "app" / "x.js").write_text("export const x = 1;\n")
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (tmp_path / "font.woff2").write_bytes(b"wOF2" + b"\0" * 100)
    (tmp_path / "icon.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'></svg>")
    return tmp_path


def _client(root: Path) -> tuple[TestClient, str]:
    tree = load_static_tree(root)
    return TestClient(Starlette(routes=static_routes(tree))), tree.hash


def test_mime_types(tree_dir: Path) -> None:
    client, h = _client(tree_dir)
    expected = {
        "app/main.js": "text/javascript; charset=utf-8",
        "img.png": "image/png",
        "font.woff2": "font/woff2",
        "icon.svg": "image/svg+xml",
    }
    for path, media_type in expected.items():
        response = client.get(f"/static/{h}/{path}")
        assert response.status_code == 200, path
        assert response.headers["content-type"] == media_type


def test_brotli_and_gzip_by_accept_encoding(tree_dir: Path) -> None:
    client, h = _client(tree_dir)
    original = (tree_dir / "app" / "main.js").read_bytes()
    br = client.get(f"/static/{h}/app/main.js", headers={"accept-encoding": "gzip, deflate, br"})
    assert br.headers["content-encoding"] == "br"
    assert int(br.headers["content-length"]) < len(original) / 5
    # httpx decodes brotli itself when the package is present; compare the decoded text.
    assert br.content == original or brotli.decompress(br.content) == original
    gz = client.get(f"/static/{h}/app/main.js", headers={"accept-encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip"
    assert gz.content == original or gzip.decompress(gz.content) == original
    refused = client.get(f"/static/{h}/app/main.js", headers={"accept-encoding": "br;q=0, gzip;q=0"})
    assert "content-encoding" not in refused.headers
    assert refused.content == original
    # Already-compressed formats are sent as they are.
    png = client.get(f"/static/{h}/img.png", headers={"accept-encoding": "gzip, br"})
    assert "content-encoding" not in png.headers


def test_wrong_hash_and_traversal_are_404(tree_dir: Path) -> None:
    client, h = _client(tree_dir)
    assert client.get(f"/static/{'0' * 16}/app/main.js").status_code == 404
    assert client.get(f"/static/{h}/app/missing.js").status_code == 404
    raw = client.get(f"/static/{h}/app/%2e%2e/%2e%2e/pyproject.toml")
    assert raw.status_code == 404
    assert client.get(f"/static/{h}/%2e%2e/%2e%2e/etc/passwd").status_code == 404


def test_hash_covers_the_whole_tree(tree_dir: Path) -> None:
    before = load_static_tree(tree_dir).hash
    (tree_dir / "app" / "x.js").write_text("export const x = 2;\n")
    after = load_static_tree(tree_dir).hash
    assert before != after
    # Same files, same hash: every worker process computes the same URLs.
    assert load_static_tree(tree_dir).hash == after


def test_relative_imports_resolve_under_the_same_hash(tree_dir: Path) -> None:
    client, h = _client(tree_dir)
    # ./x.js imported by /static/<h>/app/main.js is /static/<h>/app/x.js.
    assert client.get(f"/static/{h}/app/x.js").text == "export const x = 1;\n"


def test_the_thumbnail_placeholder_is_served_at_its_fixed_path(client: TestClient) -> None:
    """Rendered messages name Zulip's loading placeholder by a path without the tree's hash."""
    from palaver.lib.thumbnails import LOADING_PLACEHOLDER

    response = client.get(LOADING_PLACEHOLDER, headers={"accept-encoding": "identity"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.headers["cache-control"] == "public, max-age=86400"
    assert response.content.startswith(b"<svg ")
    assert client.get("/static/images/loading/loader-white.svg").status_code == 200
    # Only the named files answer there: the rest of the tree needs its hash.
    assert client.get("/static/images/favicon.svg").status_code == 404
