"""GET /realm/logins: the organization's sign-in audit log (administrators)."""

from __future__ import annotations

from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import OrganizationAdministratorRequiredError
from palaver.lib.login_records import recent_logins

router = ApiRouter()


@router.get("/realm/logins")
def get_realm_logins(
    ctx: Ctx, user_id: int | None = None, before_id: int | None = None, limit: int = 100
) -> JsonDict:
    """Sign-ins by every method (password, directory, provider, passkey), with the address,
    the browser or app, and whether they made a browser session, an API key fetch or an app
    sign-in; newest first."""
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    logins = recent_logins(
        ctx.session, ctx.requester.realm_id, user_id=user_id, before_id=before_id, limit=limit
    )
    return {"logins": logins}
