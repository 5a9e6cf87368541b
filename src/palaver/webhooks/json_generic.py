"""Generic JSON: any JSON document, posted as a code block (handy for trying a sender out)."""

from __future__ import annotations

import orjson

from palaver.webhooks.base import Integration, Notification, WebhookRequest, WebhookResult, code_block


def handle(request: WebhookRequest) -> WebhookResult:
    payload = request.json()
    pretty = orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()
    return WebhookResult(None, [Notification("JSON", code_block(pretty, "json"))])


INTEGRATION = Integration(name="json", display_name="JSON formatter", handler=handle)
