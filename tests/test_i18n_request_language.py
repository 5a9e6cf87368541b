from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from palaver.lib.i18n import (
    AcceptLanguageMiddleware,
    LanguageByHeader,
    choose_language,
    current_language,
    set_request_language,
)

HEADERS: list[str | None] = [
    None,
    "",
    "*",
    "de",
    "de-AT,de;q=0.9,en;q=0.8",
    "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5",
    "xx,ja;q=0.2",
    "en;q=0,ar",
    "es;q=abc,fr;q=0.1",
    "zh-Hans",
    "ES_mx",
]


def _served(middleware: AcceptLanguageMiddleware, header: str | None) -> tuple[str, str]:
    """The language a request renders in, and the one it renders in once known to have no user or realm."""
    seen: list[tuple[str, str]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append((current_language(), set_request_language()))

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        return None

    headers = [] if header is None else [(b"accept-language", header.encode("latin-1"))]
    scope: Scope = {"type": "http", "headers": [(b"host", b"h"), *headers]}
    middleware.app = app
    asyncio.run(middleware(scope, receive, send))
    return seen[0]


def test_a_remembered_choice_is_the_one_worked_out() -> None:
    middleware = AcceptLanguageMiddleware(None)
    for _ in range(2):  # the second round is answered from what the first remembered
        for header in HEADERS:
            expected = choose_language(accept=header)
            assert _served(middleware, header) == (expected, expected), header
    assert len(middleware.languages) == len(HEADERS) - 1  # no header is never looked up


def test_the_remembered_choices_are_bounded() -> None:
    languages = LanguageByHeader(maxsize=3)
    for header in HEADERS[1:]:
        assert languages.choose(header) == choose_language(accept=header)
        assert len(languages) <= 3
    assert languages.choose(None) == choose_language()
