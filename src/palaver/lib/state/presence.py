"""Presence of the realm's users (``presences``), in the format the client registered for."""

from __future__ import annotations

from palaver.lib.presence import presence_response
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.models.requester import Requester


@state_provider("presence")
def presences(ctx: StateContext) -> StateDict:
    return presence_response(
        ctx.session,
        Requester.of(ctx.user),
        modern=ctx.options.slim_presence,
        history_limit_days=ctx.options.presence_history_limit_days,
    )
