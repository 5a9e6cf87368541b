"""A real SMTP server in the test process, and an email worker that delivers to it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from palaver.lib.email.transport import SmtpTransport
from palaver.services import Services
from palaver.smtp_url import parse_smtp_url
from palaver.workers.email import EmailWorker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Received:
    envelope_from: str
    envelope_to: list[str]
    message: EmailMessage


@dataclass
class SmtpSink:
    port: int
    received: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = BytesParser(policy=policy.default).parsebytes(envelope.content)
        assert isinstance(message, EmailMessage)
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        return [r.message for r in self.received if address in r.envelope_to]


@pytest.fixture
def smtp_server() -> Iterator[SmtpSink]:
    sink = SmtpSink(free_port())
    controller = Controller(sink, hostname="127.0.0.1", port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


def parts(message: EmailMessage) -> tuple[str, str]:
    """The plain-text and HTML bodies."""
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return str(text.get_content()), str(html.get_content())


@pytest.fixture
def worker(services: Services, smtp_server: SmtpSink) -> EmailWorker:
    return EmailWorker(services, transport=SmtpTransport(parse_smtp_url(smtp_server.url)))


def links(text: str) -> list[str]:
    import re

    return re.findall(r"https?://[^\s\"<>]+", text)


def deliver(worker: EmailWorker, sink: SmtpSink, to: str) -> list[EmailMessage]:
    """Run the worker now; the messages the SMTP server has received for ``to``."""
    worker.run_once()
    return sink.to(to)
