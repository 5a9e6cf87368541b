"""POST /dev_fetch_api_key: any user's API key without a password, for development servers.

Off unless the ``development_auth`` setting is on; it must never be on in production.
"""

from __future__ import annotations

from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import JsonableError, RealmDeactivatedError, UserDeactivatedError
from palaver.lib.realm import get_realm
from palaver.lib.users import get_user_by_delivery_email

router = ApiRouter()


@router.post("/dev_fetch_api_key", auth="none")
def dev_fetch_api_key(ctx: Ctx, username: str) -> JsonDict:
    if not ctx.services.settings.development_auth:
        raise JsonableError("DevAuthBackend not enabled.")
    realm = get_realm(ctx.session, ctx.realm_id)
    user = get_user_by_delivery_email(ctx.session, realm.id, username)
    if user is None:
        raise JsonableError("This user is not registered.", code="AUTHENTICATION_FAILED", status=401)
    if realm.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    return {"api_key": user.api_key, "email": user.email, "user_id": user.id}
