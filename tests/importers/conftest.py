"""Importing through the ``palaver import-from`` command into a fresh server, and reading the
result back through the API as its users; files come from a loopback HTTP server."""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from palaver.cli import main
from palaver.lib.realm import get_realm_by_string_id
from palaver.models import UserProfile
from tests.helpers import Api, SeededRealm, TestUser
from tests.portability.conftest import Server, fresh_server

__all__ = ["fresh_server"]


@dataclass
class FileServer:
    """Serves ``files`` (path -> bytes) on loopback; records each request's Authorization."""

    url: str
    files: dict[str, bytes]
    authorizations: list[str | None] = field(default_factory=list)


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    files: dict[str, bytes] = {}
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            path = self.path.split("?", 1)[0]
            body = files.get(path)
            if body is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(f"http://127.0.0.1:{httpd.server_address[1]}", files, seen)
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Imported:
    server: Server
    out: str
    err: str
    code: int
    realm: SeededRealm | None

    def api(self) -> Api:
        assert self.realm is not None
        return Api(self.server.client, self.realm)

    def user(self, full_name: str) -> TestUser:
        assert self.realm is not None
        return self.realm.users[full_name]


RunImport = Callable[[str, Server | None], Imported]


@pytest.fixture
def run_import(
    fresh_server: Callable[[str], Server], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> RunImport:
    """Runs ``palaver <args>`` on a fresh server's database; reads back the realm it made."""
    # The command sees the server's URL, so addresses and links match the server's.
    monkeypatch.setenv("PALAVER_EXTERNAL_URL", "http://palaver.test")
    count = 0

    def run(args: str, server: Server | None = None) -> Imported:
        nonlocal count
        if server is None:
            count += 1
            server = fresh_server(f"server{count}")
        settings = server.services.settings
        line = (
            f"{args} --database-url {shlex.quote(settings.database_url)}"
            f" --data-dir {shlex.quote(str(settings.data_dir))}"
        )
        capsys.readouterr()
        try:
            main(shlex.split(line))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        captured = capsys.readouterr()
        words = shlex.split(args)
        option = next((o for o in ("--string-id", "--realm") if o in words), None)
        realm = _read_realm(server, words[words.index(option) + 1]) if option else None
        return Imported(server, captured.out, captured.err, code, realm)

    return run


def _read_realm(server: Server, string_id: str) -> SeededRealm | None:
    with server.services.db.session() as session:
        realm = get_realm_by_string_id(session, string_id)
        if realm is None:
            return None
        seeded = SeededRealm(realm.id, string_id, f"{string_id}.{server.services.settings.external_host}")
        for user in session.scalars(select(UserProfile).where(UserProfile.realm_id == realm.id)):
            seeded.users[user.full_name] = TestUser(
                user.id, user.email, user.api_key, user.full_name, user.role, user.is_bot
            )
        return seeded


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    """Writes ``files`` (relative path -> bytes, str, or JSON-able value) under ``root``."""
    import orjson

    for name, value in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, bytes):
            path.write_bytes(value)
        elif isinstance(value, str):
            path.write_text(value)
        else:
            path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    return root
