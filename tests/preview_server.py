"""A real HTTP server on loopback serving pages and pictures for preview tests."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.images import image_bytes
from tests.servers import serving_in_a_thread

PAGE = b"""<!doctype html><html><head>
<title>Fallback title</title>
<meta property="og:title" content="The &amp; Title">
<meta property="og:description" content="What the page is about.">
<meta property="og:image" content="/pic.png">
</head><body><p>Body text</p></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, str, bytes]] = {}

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(1.5)
        if self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/redirect"))
            self.end_headers()
            return
        if self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
            return
        if self.path == "/endless":
            # No Content-Length: the client must stop reading by itself.
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            try:
                for _ in range(10_000):
                    self.wfile.write(b"x" * 4096)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        status, content_type, body = self.routes.get(self.path, (404, "text/plain", b"missing"))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # Previews stop reading past their size limit and close the connection.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


_Handler.routes = {
    "/page.html": (200, "text/html; charset=utf-8", PAGE),
    "/slow": (200, "text/html", PAGE),
    "/pic.png": (200, "image/png", image_bytes(1680, 560, colour="green")),
    "/big": (200, "text/html", b"x" * (2 * 1024 * 1024)),
    "/plain.txt": (200, "text/plain", b"hello"),
}


@contextmanager
def preview_server() -> Iterator[str]:
    """The server's base URL, e.g. http://127.0.0.1:PORT."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    with serving_in_a_thread(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"
