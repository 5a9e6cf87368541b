"""POST /users/me/onboarding_steps: dismiss a one-time notice."""

from __future__ import annotations

from palaver.actions.onboarding_steps import do_mark_onboarding_step_as_read
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict

router = ApiRouter()


@router.post("/users/me/onboarding_steps")
def mark_onboarding_step_as_read(ctx: Ctx, onboarding_step: str) -> JsonDict:
    do_mark_onboarding_step_as_read(ctx.session, ctx.requester, onboarding_step)
    return {}
