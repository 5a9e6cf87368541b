"""POST /realm/deactivate: an owner closes the organization."""

from __future__ import annotations

from palaver.actions.realm_lifecycle import do_deactivate_realm
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import OrganizationOwnerRequiredError
from palaver.lib.realm import get_realm

router = ApiRouter()


@router.post("/realm/deactivate")
def deactivate_realm(ctx: Ctx) -> JsonDict:
    if not ctx.requester.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    do_deactivate_realm(ctx.session, get_realm(ctx.session, ctx.requester.realm_id))
    return {}
