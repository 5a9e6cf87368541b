"""Every visible user's status (``user_status``)."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_status import realm_user_statuses


@state_provider("user_status")
def user_status(ctx: StateContext) -> StateDict:
    return {"user_status": realm_user_statuses(ctx.session, ctx.user)}
