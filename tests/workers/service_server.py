"""A real HTTP server on loopback standing in for a bot's service, run in a thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.servers import serving_in_a_thread


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    content_type: str = "application/json"


@dataclass
class ServiceServer:
    url: str
    received: list[Received] = field(default_factory=list)
    # Answers in order; the last one repeats.
    answers: list[Answer] = field(default_factory=lambda: [Answer()])

    def answer(self, *answers: Answer) -> None:
        self.answers = list(answers)


@contextmanager
def service_server() -> Iterator[ServiceServer]:
    state = ServiceServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            state.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            answer = state.answers.pop(0) if len(state.answers) > 1 else state.answers[0]
            if answer.delay:
                time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                self.send_header("content-type", answer.content_type)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except OSError:
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    with serving_in_a_thread(server):
        yield state
