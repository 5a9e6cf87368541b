"""Every visible user's status (``user_status``)."""

from __future__ import annotations

import orjson
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from palaver.cache import Loaded, cached_component, columns
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_status import realm_user_statuses
from palaver.lib.users import user_access_restricted
from palaver.models import Role, UserProfile
from palaver.models.requester import Requester
from palaver.models.user_status import UserStatus


def _load_statuses(conn: Connection, realm_id: int) -> bytes:
    # Asked for a member, who sees every user: what all but restricted guests get.
    member = UserProfile(id=0, realm_id=realm_id, role=Role.MEMBER)
    with Session(bind=conn) as session:
        return orjson.dumps(realm_user_statuses(session, member))


# The statuses of every active user, encoded once per change: reading them joins each of a
# large realm's users to their status.
_STATUSES = Loaded(
    "register_user_statuses",
    frozenset({UserStatus.__tablename__})
    | columns(UserProfile, "id", "realm_id", "is_active", "presence_enabled"),
    _load_statuses,
)


@state_provider("user_status")
def user_status(ctx: StateContext) -> StateDict:
    if user_access_restricted(ctx.session, Requester.of(ctx.user)):
        return {"user_status": realm_user_statuses(ctx.session, ctx.user)}
    encoded = cached_component(ctx.session, ctx.realm.id, _STATUSES)
    # Already JSON: orjson writes fragments as they are.
    return {"user_status": orjson.Fragment(encoded)}
