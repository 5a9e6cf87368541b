"""Slack-compatible incoming webhooks: ``text``, ``blocks`` and ``attachments`` in Slack's
format (a JSON body, or a form field ``payload`` holding the JSON), converted from Slack's
mrkdwn to Markdown. Tools that can post to Slack can post here unchanged.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

import orjson

from palaver.webhooks.base import (
    Integration,
    MalformedPayloadError,
    Notification,
    WebhookRequest,
    WebhookResult,
    link,
)

_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w~])~([^~\n]+)~(?![\w~])")


def _replace_link(match: re.Match[str]) -> str:
    target, label = match.group(1), match.group(2)
    if target.startswith(("@", "#")):
        return label or target  # user and channel references name Slack's own objects
    if target.startswith("!"):
        return "@" + (label or target[1:].split("^")[0])
    return link(label, target) if label else target


def mrkdwn_to_markdown(text: str) -> str:
    # Bold first: Slack's *bold* is Markdown's italics, so it must become ** before _x_ -> *x*.
    text = _LINK.sub(_replace_link, text)
    text = _BOLD.sub(r"**\1**", text)
    text = _ITALIC.sub(r"*\1*", text)
    text = _STRIKE.sub(r"~~\1~~", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _text_of(obj: Any) -> str:
    if isinstance(obj, dict):
        return mrkdwn_to_markdown(str(obj.get("text") or ""))
    return mrkdwn_to_markdown(str(obj or ""))


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "divider":
        return "---"
    if kind == "header":
        return f"**{_text_of(block.get('text'))}**"
    if kind == "section":
        parts = [_text_of(block.get("text"))] if block.get("text") else []
        parts += [_text_of(f) for f in block.get("fields") or []]
        return "\n".join(p for p in parts if p)
    if kind == "context":
        return " ".join(_text_of(e) for e in block.get("elements") or [] if e.get("type") != "image")
    if kind == "image":
        return link(str(block.get("alt_text") or "image"), block.get("image_url"))
    return ""


def _attachment(att: dict[str, Any]) -> str:
    lines: list[str] = []
    if att.get("pretext"):
        lines.append(_text_of(att["pretext"]))
    if att.get("title"):
        lines.append(f"**{link(_text_of(att['title']), att.get('title_link'))}**")
    if att.get("text"):
        lines.append(_text_of(att["text"]))
    for f in att.get("fields") or []:
        lines.append(f"**{_text_of(f.get('title'))}**: {_text_of(f.get('value'))}")
    lines += [b for b in (_block(b) for b in att.get("blocks") or []) if b]
    if att.get("image_url"):
        lines.append(link("image", att["image_url"]))
    if att.get("footer"):
        lines.append(f"*{_text_of(att['footer'])}*")
    if not lines and att.get("fallback"):
        lines.append(_text_of(att["fallback"]))
    return "\n".join(lines)


def _payload(request: WebhookRequest) -> dict[str, Any]:
    content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
    if content_type == "application/x-www-form-urlencoded":
        field = parse_qs(request.text()).get("payload")
        if not field:
            raise MalformedPayloadError("Missing the 'payload' form field")
        try:
            value = orjson.loads(field[0])
        except orjson.JSONDecodeError:
            raise MalformedPayloadError() from None
        if not isinstance(value, dict):
            raise MalformedPayloadError("Malformed JSON: expected an object")
        return value
    return request.json_object()


def handle(request: WebhookRequest) -> WebhookResult:
    payload = _payload(request)
    parts: list[str] = []
    # With blocks, Slack shows them and uses ``text`` only as the notification fallback.
    blocks = [b for b in (_block(b) for b in payload.get("blocks") or []) if b]
    if blocks:
        parts.append("\n\n".join(blocks))
    elif payload.get("text"):
        parts.append(_text_of(payload["text"]))
    parts += [a for a in (_attachment(a) for a in payload.get("attachments") or []) if a]
    if not parts:
        raise MalformedPayloadError("The message has no text, blocks or attachments")
    channel = str(payload.get("channel") or "").lstrip("#@")
    return WebhookResult(None, [Notification(channel or "Slack", "\n\n".join(parts))])


INTEGRATION = Integration(
    name="slack_incoming",
    display_name="Slack-compatible webhook",
    handler=handle,
    doc="Accepts Slack's incoming-webhook JSON (`text`, `blocks`, `attachments`).",
)
