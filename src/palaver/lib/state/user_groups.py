"""User groups (``realm_user_groups``): named groups with their direct members and subgroups."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_group_format import format_user_groups
from palaver.lib.user_groups import get_named_groups


@state_provider("realm_user_groups")
def realm_user_groups(ctx: StateContext) -> StateDict:
    groups = get_named_groups(
        ctx.session, ctx.realm.id, include_deactivated=ctx.client.has_capability("include_deactivated_groups")
    )
    return {"realm_user_groups": format_user_groups(ctx.session, groups)}
