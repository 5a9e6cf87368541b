"""Whom the user has muted (``muted_users``)."""

from __future__ import annotations

from palaver.lib.muted_users import muted_users_list
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("muted_users")
def muted_users(ctx: StateContext) -> StateDict:
    return {"muted_users": muted_users_list(ctx.session, ctx.user.id)}
