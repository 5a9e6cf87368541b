"""User groups (``realm_user_groups``): named groups with their direct members and subgroups."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from palaver.cache import Loaded, cached_component, columns
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_group_format import format_user_groups
from palaver.lib.user_groups import get_named_groups
from palaver.models import GroupGroupMembership, UserGroup, UserGroupMembership, UserProfile


@dataclass(frozen=True, slots=True)
class _EncodedGroups:
    """The realm's named groups as JSON arrays, the same for every viewer: the role groups of
    a large organization list every user, so they are formatted once per change."""

    live: bytes
    with_deactivated: bytes


def _load_groups(conn: Connection, realm_id: int) -> _EncodedGroups:
    with Session(bind=conn) as session:
        groups = get_named_groups(session, realm_id, include_deactivated=True)
        formatted = format_user_groups(session, groups)
    live = [g for g in formatted if not g["deactivated"]]
    return _EncodedGroups(orjson.dumps(live), orjson.dumps(formatted))


# Members leave out deactivated users, so whether users are active is read too.
_GROUPS = Loaded(
    "register_user_groups",
    frozenset(
        {
            UserGroup.__tablename__,
            UserGroupMembership.__tablename__,
            GroupGroupMembership.__tablename__,
        }
    )
    | columns(UserProfile, "realm_id", "is_active"),
    _load_groups,
)


@state_provider("realm_user_groups")
def realm_user_groups(ctx: StateContext) -> StateDict:
    groups = cached_component(ctx.session, ctx.realm.id, _GROUPS)
    encoded = (
        groups.with_deactivated if ctx.client.has_capability("include_deactivated_groups") else groups.live
    )
    # Already JSON: orjson writes fragments as they are.
    return {"realm_user_groups": orjson.Fragment(encoded)}
