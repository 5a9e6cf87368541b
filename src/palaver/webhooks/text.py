"""Plain text: the body is the message, so ``curl --data-binary @file URL`` just works.

A form-encoded body with a ``content`` field (``curl -d content=...``) is read as that field.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from palaver.webhooks.base import (
    Integration,
    MalformedPayloadError,
    Notification,
    WebhookRequest,
    WebhookResult,
)


def handle(request: WebhookRequest) -> WebhookResult:
    text = request.text()
    content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
    if content_type == "application/x-www-form-urlencoded" and text.startswith("content="):
        text = parse_qs(text, keep_blank_values=True).get("content", [""])[0]
    if not text.strip():
        raise MalformedPayloadError("The message is empty")
    return WebhookResult(None, [Notification("notifications", text)])


INTEGRATION = Integration(
    name="text",
    display_name="Plain text",
    handler=handle,
    doc="The request body is the message (Markdown). `curl --data-binary 'Backup done' URL`.",
)
