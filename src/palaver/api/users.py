"""Users: list, fetch, create, update, deactivate, reactivate."""

from __future__ import annotations

from typing import Annotated

import orjson
from pydantic import BaseModel, ConfigDict

from palaver.actions.users import (
    ProfileDataChange,
    do_create_user,
    do_deactivate_own_user,
    do_deactivate_user,
    do_reactivate_user,
    do_update_user,
)
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.exceptions import (
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
    UnauthorizedError,
)
from palaver.lib.profile_fields import profile_data_for_users
from palaver.lib.realm import get_realm, realm_email_host
from palaver.lib.realm_user_list import realm_members_json
from palaver.lib.users import (
    access_user_by_email,
    access_user_by_id,
    active_user_count,
    format_own_user,
    format_user,
    format_users,
    get_users,
    is_last_owner,
)

router = ApiRouter()


class CannotDeactivateLastUserError(JsonableError):
    """Leaving would orphan the organization; clients word their prompt from ``entity``."""

    code = "CANNOT_DEACTIVATE_LAST_USER"

    def __init__(self, *, is_last_owner: bool) -> None:
        entity = "organization owner" if is_last_owner else "user"
        super().__init__(f"Cannot deactivate the only {entity}", is_last_owner=is_last_owner, entity=entity)


class ProfileDataItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    value: str | list[int] | None = None


@router.get("/users", auth="optional")
def list_users(
    ctx: Ctx,
    client_gravatar: bool = True,
    include_custom_profile_fields: bool = False,
    user_ids: list[int] | None = None,
) -> JsonDict:
    viewer = ctx.requester_or_none
    realm = realm_settings(ctx.session, ctx.realm_id)
    if viewer is None and not realm.enable_spectator_access:
        raise UnauthorizedError()
    if viewer is not None and user_ids is None and include_custom_profile_fields:
        # Every user with their profile data: what /register's realm_users is built from,
        # already JSON (the web app asks this of 10,000 users after each login).
        return {
            "members": orjson.Fragment(
                realm_members_json(ctx.session, ctx.me, client_gravatar=client_gravatar)
            )
        }
    users = get_users(ctx.session, realm.id, viewer, user_ids)
    if user_ids is not None:
        found = {u.id for u in users}
        missing = [i for i in user_ids if i not in found]
        if missing:
            raise JsonableError(f"Invalid user ID: {missing[0]}")
    members = format_users(
        ctx.session,
        users,
        viewer,
        client_gravatar=client_gravatar,
        include_custom_profile_fields=include_custom_profile_fields,
        email_host=realm_email_host(ctx.services.settings, realm),
    )
    return {"members": members}


@router.get("/users/me")
def get_own_user(ctx: Ctx) -> JsonDict:
    return format_own_user(ctx.session, ctx.me)


@router.get("/users/{user_id_or_email}")
def get_user(
    ctx: Ctx,
    user_id_or_email: str,
    client_gravatar: bool = True,
    include_custom_profile_fields: bool = False,
) -> JsonDict:
    # str.isdigit() also admits digits of other scripts, which int() reads or rejects.
    if user_id_or_email.isascii() and user_id_or_email.isdigit():
        target = access_user_by_id(ctx.session, ctx.requester, int(user_id_or_email), allow_deactivated=True)
    else:
        email_host = realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id))
        target = access_user_by_email(ctx.session, ctx.requester, user_id_or_email, email_host=email_host)
    profile = None
    if include_custom_profile_fields:
        profile = profile_data_for_users(ctx.session, [target.id]).get(target.id, {})
    return {"user": format_user(target, ctx.requester, client_gravatar=client_gravatar, profile_data=profile)}


@router.post("/users")
def create_user(ctx: Ctx, email: str, password: str, full_name: str) -> JsonDict:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if not password:
        raise JsonableError("Password cannot be empty")
    user = do_create_user(
        ctx.session,
        get_realm(ctx.session, ctx.requester.realm_id),
        email=email,
        full_name=full_name,
        password_hash=ctx.services.passwords.hash(password),
        email_host=realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id)),
    )
    return {"user_id": user.id}


@router.patch("/users/{user_id:int}")
def update_user(
    ctx: Ctx,
    user_id: int,
    full_name: str | None = None,
    role: int | None = None,
    profile_data: list[ProfileDataItem] | None = None,
    new_email: Annotated[str | None, ApiParam(documentation_only=True)] = None,
) -> JsonDict:
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_deactivated=True, for_admin=True)
    if new_email is not None:
        raise JsonableError("Email changes are not available on this server")
    do_update_user(
        ctx.session,
        target,
        acting_user=ctx.requester,
        full_name=full_name,
        role=role,
        profile_data=[ProfileDataChange(item.id, item.value) for item in profile_data or []],
    )
    return {}


@router.delete("/users/{user_id:int}")
def deactivate_user(
    ctx: Ctx,
    user_id: int,
    deactivation_notification_comment: Annotated[str | None, ApiParam(documentation_only=True)] = None,
) -> JsonDict:
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_bots=False, for_admin=True)
    if target.is_realm_owner and not ctx.requester.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    if deactivation_notification_comment is not None and len(deactivation_notification_comment) > 2000:
        raise JsonableError("deactivation_notification_comment is too long (limit: 2000 characters)")
    do_deactivate_user(ctx.session, target, acting_user=ctx.requester)
    return {}


@router.delete("/users/me")
def deactivate_own_user(ctx: Ctx) -> JsonDict:
    if active_user_count(ctx.session, ctx.requester.realm_id) <= 1:
        raise CannotDeactivateLastUserError(is_last_owner=False)
    if is_last_owner(ctx.session, ctx.requester):
        raise CannotDeactivateLastUserError(is_last_owner=True)
    do_deactivate_own_user(ctx.session, ctx.requester)
    return {}


@router.post("/users/{user_id:int}/reactivate")
def reactivate_user(ctx: Ctx, user_id: int) -> JsonDict:
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_deactivated=True, for_admin=True)
    do_reactivate_user(ctx.session, target)
    return {}
