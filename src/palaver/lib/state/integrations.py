"""What bots can be built on this server: incoming-webhook integrations and embedded bots."""

from __future__ import annotations

from palaver.lib.embedded_bots import available_embedded_bots
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.webhooks import INTEGRATIONS


@state_provider("realm_incoming_webhook_bots")
def realm_incoming_webhook_bots(ctx: StateContext) -> StateDict:
    return {"realm_incoming_webhook_bots": [i.describe() for i in INTEGRATIONS.values()]}


@state_provider("realm_embedded_bots")
def realm_embedded_bots(ctx: StateContext) -> StateDict:
    return {"realm_embedded_bots": available_embedded_bots()}
