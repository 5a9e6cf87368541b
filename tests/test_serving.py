"""The one-write response cycle puts the same bytes on the wire as uvicorn's own, fewer times."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from palaver.serving import OneWriteCycle

DEFAULT_HEADERS = [(b"server", b"uvicorn"), (b"date", b"Sat, 28 Nov 2026 09:00:00 GMT")]


class RecordingTransport:
    """What the cycle sees of a socket: the writes, in order, and whether it was closed."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _play(
    cls: type[RequestResponseCycle], method: str, keep_alive: bool, messages: list[Any]
) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        transport = RecordingTransport()
        completed: list[bool] = []
        cycle = cls(
            scope={"type": "http", "method": method, "http_version": "1.1"},  # type: ignore[typeddict-item]
            transport=transport,  # type: ignore[arg-type]
            flow=FlowControl(transport),  # type: ignore[arg-type]
            logger=logging.getLogger("test"),
            access_logger=logging.getLogger("test.access"),
            access_log=False,
            default_headers=list(DEFAULT_HEADERS),
            message_event=asyncio.Event(),
            expect_100_continue=False,
            keep_alive=keep_alive,
            on_response=lambda: completed.append(True),
        )
        error: str | None = None
        for message in messages:
            try:
                await cycle.send(message)
            except (RuntimeError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}"
                break
        return {
            "wire": b"".join(transport.writes),
            "writes": len(transport.writes),
            "closed": transport.closed,
            "error": error,
            "complete": cycle.response_complete,
            "keep_alive": cycle.keep_alive,
            "on_response": len(completed),
        }

    return asyncio.run(run())


def _start(status: int, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status, "headers": headers}


def _body(body: bytes, more: bool = False) -> dict[str, Any]:
    return {"type": "http.response.body", "body": body, "more_body": more}


def test_a_json_answer_is_one_write_of_what_uvicorn_would_send() -> None:
    body = b'{"result":"success","msg":"","events":[]}'
    messages = [
        _start(200, [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]),
        _body(body),
    ]
    ours = _play(OneWriteCycle, "GET", True, messages)
    theirs = _play(RequestResponseCycle, "GET", True, messages)
    assert ours["writes"] == 1
    assert theirs["writes"] == 2
    assert ours == {**theirs, "writes": 1}
    assert ours["wire"].endswith(b"\r\n\r\n" + body)


_header = st.sampled_from(
    [
        (b"content-type", b"application/json"),
        (b"Content-Length", b"5"),
        (b"content-length", b"0"),
        (b"content-length", b"x"),
        (b"transfer-encoding", b"chunked"),
        (b"connection", b"close"),
        (b"connection", b"keep-alive"),
        (b"x-request-id", b"abc"),
        (b"x-bad", b"line\nbreak"),
        (b"bad name", b"value"),
    ]
)
_message = st.one_of(
    st.builds(_start, st.sampled_from([200, 204, 304, 404, 500]), st.lists(_header, max_size=4)),
    st.builds(_body, st.sampled_from([b"", b"hello", b"hello!", b"x" * 70_000]), st.booleans()),
)


def test_the_first_bad_header_names_the_error_as_uvicorn_does() -> None:
    # Found by Hypothesis (below): a bad value before a bad name is reported as the value.
    messages = [_start(200, [(b"Content-Length", b"5"), (b"x-bad", b"line\nbreak"), (b"bad name", b"value")])]
    ours = _play(OneWriteCycle, "GET", True, messages)
    theirs = _play(RequestResponseCycle, "GET", True, messages)
    assert ours["error"] == theirs["error"] == "RuntimeError: Invalid HTTP header value."


@given(
    method=st.sampled_from(["GET", "POST", "HEAD"]),
    keep_alive=st.booleans(),
    messages=st.lists(_message, min_size=1, max_size=4),
)
def test_any_sequence_of_messages_gives_uvicorns_bytes_state_and_errors(
    method: str, keep_alive: bool, messages: list[Any]
) -> None:
    ours = _play(OneWriteCycle, method, keep_alive, messages)
    theirs = _play(RequestResponseCycle, method, keep_alive, messages)
    assert ours.pop("writes") <= theirs.pop("writes")
    our_wire, their_wire = ours.pop("wire"), theirs.pop("wire")
    assert ours == theirs
    if theirs["complete"] or theirs["error"]:
        assert our_wire == their_wire
    else:
        # An app that stops after the head (uvicorn then closes the connection): the held
        # head is not sent, and the client sees the connection close either way.
        assert their_wire.startswith(our_wire)
