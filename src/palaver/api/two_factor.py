"""DELETE /users/{user_id}/two_factor: an administrator turns off someone's authenticator."""

from __future__ import annotations

from palaver.actions.two_factor import do_reset_two_factor
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.users import access_user_by_id

router = ApiRouter()


@router.delete("/users/{user_id:int}/two_factor")
def reset_two_factor(ctx: Ctx, user_id: int) -> JsonDict:
    """For someone who lost their phone (``palaver reset-2fa`` from the browser): their
    authenticator, recovery codes and remembered browsers are forgotten, so their password
    alone signs them in until they set it up again. Passkeys stay. Administrators only
    (owners for an owner); recorded in ``GET /realm/logins``."""
    user = access_user_by_id(
        ctx.session, ctx.requester, user_id, allow_deactivated=True, allow_bots=False, for_admin=True
    )
    had = do_reset_two_factor(
        ctx.session, ctx.requester, user, ip_address=ctx.client_ip, client=ctx.user_agent
    )
    return {"had_two_factor": had}
