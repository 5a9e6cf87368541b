"""Presence: POST /users/me/presence (ping, then poll), GET /realm/presence and
GET /users/{user_id_or_email}/presence.
"""

from __future__ import annotations

from palaver.actions.presence import do_update_user_presence
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.presence import presence_response, user_presence
from palaver.lib.realm import realm_email_host
from palaver.lib.users import access_user_by_email, access_user_by_id

router = ApiRouter()


@router.post("/users/me/presence")
def update_presence(
    ctx: Ctx,
    status: str,
    ping_only: bool = False,
    # Only feeds usage statistics in Zulip, which Palaver does not keep.
    new_user_input: bool = False,
    slim_presence: bool = False,
    last_update_id: int | None = None,
    history_limit_days: int | None = None,
) -> JsonDict:
    if status not in ("active", "idle"):
        raise JsonableError(f"Invalid status: {status}")
    requester = ctx.requester
    if requester.presence_enabled:
        do_update_user_presence(ctx.session, requester, "active" if status == "active" else "idle")
    if ping_only:
        return {}
    # Clients that track update IDs read the modern format whatever slim_presence says.
    modern = slim_presence or last_update_id is not None
    return presence_response(
        ctx.session,
        requester,
        modern=modern,
        last_update_id=last_update_id,
        history_limit_days=history_limit_days,
    )


@router.get("/realm/presence")
def get_realm_presence(ctx: Ctx) -> JsonDict:
    response = presence_response(ctx.session, ctx.requester, modern=False)
    return {"presences": response["presences"], "server_timestamp": response["server_timestamp"]}


@router.get("/users/{user_id_or_email}/presence")
def get_user_presence(ctx: Ctx, user_id_or_email: str) -> JsonDict:
    if user_id_or_email.isascii() and user_id_or_email.isdigit():
        target = access_user_by_id(ctx.session, ctx.requester, int(user_id_or_email), allow_deactivated=True)
    else:
        email_host = realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id))
        target = access_user_by_email(ctx.session, ctx.requester, user_id_or_email, email_host=email_host)
    return {"presence": user_presence(ctx.session, target, user_id_or_email)}
