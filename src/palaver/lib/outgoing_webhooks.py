"""Outgoing webhooks: the request a service bot's server receives, and reading its answer.

Two formats, chosen by the service's ``interface``: Palaver's own (Zulip's JSON payload:
``bot_email``, ``bot_full_name``, ``data``, ``message``, ``token``, ``trigger``) and Slack's
outgoing-webhook form fields. An answer's ``content`` (Slack: ``text``) becomes the bot's
reply; ``response_not_required`` or an empty answer means none.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson
from sqlalchemy.orm import Session

from palaver.lib.addresses import is_public_address
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_format import finalize_message, wide_message_dicts
from palaver.models.bots import BotService, ServiceInterface
from palaver.models.messages import Message
from palaver.models.users import UserProfile


class DeliveryRefusedError(Exception):
    """The service URL may not be called (it names a private address)."""


class BadResponseError(Exception):
    """The service answered 2xx with something that is not a usable answer."""


def outgoing_message(session: Session, message: Message) -> dict[str, Any]:
    """The triggering message as GET /messages shows it in raw Markdown, plus its HTML."""
    wide = wide_message_dicts(session, [message])[message.id]
    result = finalize_message(wide, apply_markdown=False, client_gravatar=False, allow_empty_topic_name=True)
    result["rendered_content"] = wide["content"]
    return result


@dataclass(frozen=True)
class OutgoingRequest:
    json: dict[str, Any] | None = None
    form: list[tuple[str, str]] | None = None


def build_request(
    bot: UserProfile, service: BotService, message: dict[str, Any], trigger: str, realm_host: str
) -> OutgoingRequest:
    if service.interface == ServiceInterface.SLACK:
        if message["type"] != "stream":
            raise BadResponseError("Slack outgoing webhooks don't support direct messages.")
        return OutgoingRequest(
            form=[
                ("token", service.token),
                ("team_id", f"T{bot.realm_id}"),
                ("team_domain", realm_host),
                ("channel_id", f"C{message['stream_id']}"),
                ("channel_name", str(message["display_recipient"])),
                ("thread_ts", str(message["timestamp"])),
                ("timestamp", str(message["timestamp"])),
                ("user_id", f"U{message['sender_id']}"),
                ("user_name", str(message["sender_full_name"])),
                ("text", str(message["content"])),
                ("trigger_word", trigger),
                ("service_id", str(bot.id)),
            ]
        )
    return OutgoingRequest(
        json={
            "bot_email": bot.email,
            "bot_full_name": bot.full_name,
            "data": message["content"],
            "message": message,
            "token": service.token,
            "trigger": trigger,
        }
    )


def reply_content(interface: int, body: bytes) -> str | None:
    """The bot's reply in a successful answer, or None when it wants none."""
    if not body.strip():
        return None
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadResponseError("Invalid JSON in response") from None
    if answer == "":
        return None
    if not isinstance(answer, dict):
        raise BadResponseError("Invalid response format")
    if interface == ServiceInterface.SLACK:
        content = answer.get("text")
    elif answer.get("response_not_required"):
        return None
    else:
        content = answer.get("content", answer.get("response_string"))
    if content is None:
        return None
    content = str(content)
    return content if content.strip() else None


def _is_private(address: str) -> bool:
    # The one policy of every fetch of a user's URL (link previews too).
    return not is_public_address(address)


def check_target_allowed(url: str, allow_private: bool, *, resolve: bool = True) -> None:
    """Refuse URLs whose host is (or resolves to) a private, loopback or link-local address.

    ``resolve=False`` judges only literal addresses and ``localhost`` (for request-time
    checks that must not wait on DNS); deliveries resolve the name, to refuse with a clear
    reason. This check is not what keeps the inside safe: the name could resolve elsewhere
    a moment later, so the delivery itself connects through ``lib/guarded_http.py``, which
    checks the address it connects to.
    """
    if allow_private:
        return
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        raise DeliveryRefusedError(f"{host} is a loopback address")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        if _is_private(host):
            raise DeliveryRefusedError(f"{host} is a private or loopback address")
        return
    if not resolve:
        return
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as e:
        raise DeliveryRefusedError(f"cannot resolve {host}: {e}") from None
    for info in infos:
        address = str(info[4][0])
        if _is_private(address):
            raise DeliveryRefusedError(f"{host} resolves to the private address {address}")


def check_service_url(allow_private: bool, var_name: str, url: str) -> None:
    """At bot creation or edit: refuse URLs that name a private address outright."""
    try:
        check_target_allowed(url, allow_private, resolve=False)
    except DeliveryRefusedError as e:
        raise JsonableError(f"{var_name} may not point to a private address: {e}") from None
