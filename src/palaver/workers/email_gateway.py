"""The email gateway's receivers: an SMTP or LMTP server (aiosmtpd), or one message on stdin.

A mail server delivers mail for the gateway domain here, over LMTP/SMTP or by piping each
message to ``palaver email-gateway --stdin``. Each recipient address is handled on its own
(``actions/email_gateway.do_receive_email``) in a worker thread; a refused address gets a
5xx reply, so the sending server bounces it to the author.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP

from palaver.actions.email_gateway import GatewayError, do_receive_email
from palaver.services import Services

logger = logging.getLogger(__name__)


def receive(services: Services, raw: bytes, recipients: list[str]) -> tuple[list[int], list[str]]:
    """Deliver to every recipient; (message IDs, SMTP replies of refused recipients)."""
    delivered: list[int] = []
    refused: list[str] = []
    for recipient in recipients:
        try:
            delivered.append(do_receive_email(services.settings, services.db, raw, recipient))
        except GatewayError as e:
            logger.info("email gateway refused mail to %s: %s", recipient, e.smtp_reply)
            refused.append(e.smtp_reply)
        except Exception:
            logger.exception("email gateway failed on mail to %s", recipient)
            refused.append("451 4.3.0 Temporary failure, try again later")
    return delivered, refused


class GatewayHandler:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = envelope.original_content or envelope.content
        data = raw if isinstance(raw, bytes) else str(raw).encode()
        delivered, refused = await asyncio.to_thread(receive, self.services, data, list(envelope.rcpt_tos))
        if refused and not delivered:
            return refused[0]
        return "250 2.0.0 Message accepted"


class _LmtpController(Controller):
    def factory(self) -> SMTP:
        return LMTP(self.handler, **self.SMTP_kwargs)


def make_controller(services: Services, host: str, port: int, *, lmtp: bool = False) -> Controller:
    handler = GatewayHandler(services)
    kwargs: dict[str, Any] = {"hostname": host, "port": port, "decode_data": False}
    if lmtp:
        return _LmtpController(handler, **kwargs)
    return Controller(handler, **kwargs)
