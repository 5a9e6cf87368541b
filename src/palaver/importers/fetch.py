"""Downloading the files an export only links to (Slack's files and custom emoji).

``base_url`` replaces the scheme and host of every URL (keeping the path and query), so
an operator can route downloads through a mirror and tests can serve them from loopback.
The token goes in an ``Authorization: Bearer`` header, as Slack's file URLs require.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

MAX_DOWNLOAD_BYTES = 1 << 30


@dataclass(frozen=True)
class Downloader:
    token: str | None = None
    base_url: str | None = None
    timeout: float = 60.0

    def url_for(self, url: str) -> str:
        if not self.base_url:
            return url
        parts = urllib.parse.urlsplit(url)
        base = urllib.parse.urlsplit(self.base_url)
        path = base.path.rstrip("/") + parts.path
        return urllib.parse.urlunsplit((base.scheme, base.netloc, path, parts.query, ""))

    def get(self, url: str) -> bytes | None:
        """The bytes at ``url``, or None when the server has nothing (or cannot be reached)."""
        target = self.url_for(url)
        if urllib.parse.urlsplit(target).scheme not in ("http", "https"):
            return None
        request = urllib.request.Request(target)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data: bytes = response.read(MAX_DOWNLOAD_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError):
            return None
        if len(data) > MAX_DOWNLOAD_BYTES:
            return None
        return data
