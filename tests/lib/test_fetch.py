"""The preview fetcher's limits, against a real server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from palaver.lib.addresses import is_public_address
from palaver.lib.fetch import Fetcher, FetchError
from tests.preview_server import PAGE, preview_server


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with preview_server() as url:
        yield url


@pytest.fixture
def fetcher() -> Iterator[Fetcher]:
    built = Fetcher(allow_private=True, timeout_seconds=0.5, deadline_seconds=3)
    yield built
    built.close()


def test_private_addresses_are_refused_by_default(base: str) -> None:
    strict = Fetcher()
    try:
        with pytest.raises(FetchError, match="no address"):
            strict.get(f"{base}/page.html", max_bytes=10_000)
        with pytest.raises(FetchError, match="no address"):
            strict.get("http://localhost:1/", max_bytes=10_000)
    finally:
        strict.close()


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2a00:1450:4001:80b::200e", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1%eth0", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
    ],
)
def test_public_address_rule(address: str, public: bool) -> None:
    assert is_public_address(address) is public


def test_fetch_and_redirects(base: str, fetcher: Fetcher) -> None:
    page = fetcher.get(f"{base}/page.html", max_bytes=10_000)
    assert page.status == 200 and page.content_type == "text/html" and page.body == PAGE
    moved = fetcher.get(f"{base}/redirect/page.html", max_bytes=10_000)
    assert moved.url == f"{base}/page.html" and moved.body == PAGE
    with pytest.raises(FetchError, match="too many redirects"):
        fetcher.get(f"{base}/loop", max_bytes=10_000)
    with pytest.raises(FetchError, match="status 404"):
        fetcher.get(f"{base}/nothing", max_bytes=10_000)


def test_limits(base: str, fetcher: Fetcher) -> None:
    with pytest.raises(FetchError, match="too large"):
        fetcher.get(f"{base}/big", max_bytes=100_000)  # declared length
    with pytest.raises(FetchError, match="too large"):
        fetcher.get(f"{base}/endless", max_bytes=100_000)  # no length: stops reading
    with pytest.raises(FetchError, match="timed out"):
        fetcher.get(f"{base}/slow", max_bytes=100_000)
    for url in ("ftp://example.com/x", "file:///etc/passwd", "http://user:pw@example.com/"):
        with pytest.raises(FetchError):
            fetcher.get(url, max_bytes=100)
