"""POST /realm/deactivate: an owner closes the organization."""

from __future__ import annotations

from palaver.actions.realm_lifecycle import do_deactivate_realm
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import OrganizationOwnerRequiredError

router = ApiRouter()


@router.post("/realm/deactivate")
def deactivate_realm(ctx: Ctx) -> JsonDict:
    if not ctx.me.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    do_deactivate_realm(ctx.session, ctx.me.realm)
    return {}
