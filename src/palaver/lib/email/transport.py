"""Handing a built message to the world: an SMTP server, or the outbox directory.

Without ``smtp_url`` each message is written to ``<data_dir>/outbox/`` as an ``.eml`` file
(``palaver outbox`` lists them), so a server with no mail set up still shows what it sent.
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path

from palaver.config import Settings
from palaver.smtp_url import SmtpTarget, parse_smtp_url

OUTBOX_DIR = "outbox"


class EmailTransport:
    def send(self, message: EmailMessage, name: str) -> None:
        raise NotImplementedError


class SmtpTransport(EmailTransport):
    def __init__(self, target: SmtpTarget, *, tls_context: ssl.SSLContext | None = None) -> None:
        self.target = target
        self.tls_context = tls_context or ssl.create_default_context()

    @contextmanager
    def connected(self) -> Iterator[smtplib.SMTP]:
        """A session with the server, encrypted and logged in as ``smtp_url`` says."""
        t = self.target
        smtp: smtplib.SMTP
        if t.use_tls:
            smtp = smtplib.SMTP_SSL(t.host, t.port, timeout=t.timeout, context=self.tls_context)
        else:
            smtp = smtplib.SMTP(t.host, t.port, timeout=t.timeout)
        with smtp:
            if t.starttls:
                smtp.starttls(context=self.tls_context)
            if t.username is not None:
                smtp.login(t.username, t.password or "")
            yield smtp

    def send(self, message: EmailMessage, name: str) -> None:
        with self.connected() as smtp:
            smtp.send_message(message)

    def check(self) -> None:
        """Connect, encrypt and log in as a send would, sending nothing (``palaver doctor``)."""
        with self.connected() as smtp:
            smtp.noop()


class DirectoryTransport(EmailTransport):
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def send(self, message: EmailMessage, name: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name and renamed, so a reader never sees half a file.
        final = self.directory / f"{name}.eml"
        partial = self.directory / f".{name}.eml.tmp"
        partial.write_bytes(bytes(message))
        partial.replace(final)


def outbox_dir(settings: Settings) -> Path:
    return settings.data_dir / OUTBOX_DIR


def make_transport(settings: Settings) -> EmailTransport:
    if settings.smtp_url:
        return SmtpTransport(parse_smtp_url(settings.smtp_url))
    return DirectoryTransport(outbox_dir(settings))
