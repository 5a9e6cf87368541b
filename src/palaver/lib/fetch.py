"""Fetching other servers' pages and pictures for previews, within strict limits.

A message's links are chosen by its sender, so every fetch is treated as hostile (and every
other request Palaver makes to a URL a user chose, such as outgoing webhooks, connects
through the same ``GuardedBackend``: lib/guarded_backend.py):

- only http and https, on their usual ports or any other the URL names;
- the address is checked when the connection is made, not only when the name is looked up
  (a name that resolves to a public address at first and to 127.0.0.1 a moment later gets
  nowhere): connections to loopback, private, link-local, multicast or reserved addresses
  are refused (``allow_private`` lifts this, for tests against a local server);
- every redirect is followed by hand, re-checked the same way, at most ``max_redirects``;
- each step has a timeout, the whole fetch a deadline, and the body a size cap (reading
  stops there: the rest is never downloaded).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    import httpcore

USER_AGENT = "Mozilla/5.0 (compatible; Palaver link previews)"


class FetchError(Exception):
    """Why a URL was not fetched (refused address, too large, too slow, bad response)."""


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes


class Fetcher:
    def __init__(
        self,
        *,
        allow_private: bool = False,
        timeout_seconds: float = 5.0,
        deadline_seconds: float = 10.0,
        max_redirects: int = 3,
    ) -> None:
        self.allow_private = allow_private
        self.timeout_seconds = timeout_seconds
        self.deadline_seconds = deadline_seconds
        self.max_redirects = max_redirects
        # Opened by the first fetch: httpcore loads with it, not at start-up (about 1 MiB
        # of a server that never fetches; tests/test_startup_imports.py).
        self._pool: httpcore.ConnectionPool | None = None
        self._pool_lock = threading.Lock()

    def _connection_pool(self) -> httpcore.ConnectionPool:
        with self._pool_lock:
            if self._pool is None:
                import httpcore  # noqa: PLC0415

                from palaver.lib.guarded_backend import GuardedBackend  # noqa: PLC0415

                self._pool = httpcore.ConnectionPool(
                    network_backend=GuardedBackend(self.allow_private), max_connections=4, retries=0
                )
            return self._pool

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()

    def get(self, url: str, *, max_bytes: int, accept: str = "*/*") -> Fetched:
        deadline = time.monotonic() + self.deadline_seconds
        for _ in range(self.max_redirects + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise FetchError(f"not an http(s) URL: {url}")
            if parts.username or parts.password:
                raise FetchError("URLs with credentials are not fetched")
            status, headers, body = self._get_once(url, max_bytes, accept, deadline)
            if status in (301, 302, 303, 307, 308):
                location = headers.get("location")
                if not location:
                    raise FetchError("redirect without a location")
                url = urljoin(url, location)
                continue
            if status != 200:
                raise FetchError(f"status {status}")
            content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            return Fetched(url, status, content_type, body)
        raise FetchError("too many redirects")

    def _get_once(
        self, url: str, max_bytes: int, accept: str, deadline: float
    ) -> tuple[int, dict[str, str], bytes]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchError("deadline passed")
        import httpcore  # noqa: PLC0415  (loaded by the pool)

        pool = self._connection_pool()
        step = min(self.timeout_seconds, remaining)
        timeouts = {"connect": step, "read": step, "write": step, "pool": step}
        headers: list[tuple[bytes | str, bytes | str]] = [
            ("User-Agent", USER_AGENT),
            ("Accept", accept),
            ("Accept-Encoding", "identity"),
        ]
        try:
            with pool.stream("GET", url, headers=headers, extensions={"timeout": timeouts}) as response:
                found = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
                if response.status in (301, 302, 303, 307, 308):
                    return response.status, found, b""
                declared = found.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise FetchError("response too large")
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_stream():
                    size += len(chunk)
                    if size > max_bytes:
                        raise FetchError("response too large")
                    if time.monotonic() > deadline:
                        raise FetchError("deadline passed")
                    chunks.append(chunk)
                return response.status, found, b"".join(chunks)
        except httpcore.TimeoutException as e:
            raise FetchError("timed out") from e
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as e:
            raise FetchError(str(e) or type(e).__name__) from e
