"""Channels: create, list, fetch, edit, archive; subscriber lists; default channels."""

from __future__ import annotations

from typing import Annotated, Any

from palaver.actions.channel_creation import do_create_channel
from palaver.actions.channels import (
    ChannelChanges,
    do_add_default_stream,
    do_archive_stream,
    do_remove_default_stream,
    do_update_stream,
)
from palaver.actions.messages import SendContext
from palaver.actions.new_channels import NewChannel
from palaver.api.context import Ctx
from palaver.api.params import ApiParam, with_setting_params
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.channels import (
    UNCHANGED,
    access_stream_by_id,
    access_stream_by_name,
    default_stream_ids,
    format_stream,
    format_streams,
    get_streams_for_user,
    parse_message_retention_days,
    subscriber_ids,
)
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.group_settings import GroupSettingUpdate, GroupSettingValue
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.subscriptions import principals_to_users
from palaver.models.channels import STREAM_GROUP_SETTINGS

router = ApiRouter()


# Default of parameters for which null is a value to set (null folder: no folder).
_NOT_SENT: Any = UNCHANGED


def email_host(ctx: Ctx) -> str:
    return realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id))


def given_group_settings(settings: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in settings.items() if value is not None}


def retention_days(value: str | int | None) -> int | None:
    return None if value is None else parse_message_retention_days(value)


def announcement_context(ctx: Ctx, announce: bool) -> SendContext | None:
    """What a creation announcement needs of the request, when one is asked for."""
    if not announce:
        return None
    return SendContext(
        realm_url=realm_url(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id)),
        email_host=email_host(ctx),
    )


@router.post("/channels/create")
@with_setting_params(STREAM_GROUP_SETTINGS, GroupSettingValue)
def create_channel(
    ctx: Ctx,
    name: str,
    subscribers: list[int],
    description: str = "",
    announce: bool = False,
    invite_only: bool = False,
    is_web_public: bool = False,
    is_default_stream: bool = False,
    folder_id: int | None = None,
    topics_policy: str = "inherit",
    history_public_to_subscribers: bool | None = None,
    message_retention_days: str | int | None = None,
    **group_settings: GroupSettingValue | None,
) -> JsonDict:
    new = NewChannel(
        name=name,
        description=description,
        invite_only=invite_only,
        is_web_public=is_web_public,
        history_public_to_subscribers=history_public_to_subscribers,
        message_retention_days=retention_days(message_retention_days),
        topics_policy=topics_policy,
        folder_id=folder_id,
        group_settings=given_group_settings(group_settings),
        is_default_stream=is_default_stream,
    )
    users = principals_to_users(ctx.session, ctx.requester, subscribers, email_host=email_host(ctx))
    stream = do_create_channel(
        ctx.session, ctx.requester, new, users, announce=announcement_context(ctx, announce)
    )
    return {"id": stream.id}


@router.get("/streams")
def list_streams(
    ctx: Ctx,
    include_public: bool = True,
    include_web_public: bool = False,
    include_subscribed: bool = True,
    exclude_archived: bool = True,
    include_all_active: bool = False,
    include_all: bool = False,
    include_default: bool = False,
    include_owner_subscribed: bool = False,
    include_can_access_content: bool = False,
) -> JsonDict:
    if include_all_active and not ctx.requester.is_realm_admin:
        raise JsonableError("User not authorized for this query")
    streams = get_streams_for_user(
        ctx.session,
        ctx.requester,
        include_public=include_public,
        include_web_public=include_web_public,
        include_subscribed=include_subscribed,
        exclude_archived=exclude_archived,
        include_all=include_all or include_all_active,
        include_default=include_default,
        include_owner_subscribed=include_owner_subscribed,
        include_can_access_content=include_can_access_content,
    )
    return {"streams": format_streams(ctx.session, streams, include_default=include_default)}


@router.get("/streams/{stream_id:int}")
def get_stream(ctx: Ctx, stream_id: int) -> JsonDict:
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    return {"stream": format_stream(ctx.session, stream)}


@router.patch("/streams/{stream_id:int}")
@with_setting_params(STREAM_GROUP_SETTINGS, GroupSettingUpdate)
def update_stream(
    ctx: Ctx,
    stream_id: int,
    new_name: Annotated[str | None, ApiParam(aliases=("name",))] = None,
    description: str | None = None,
    is_private: bool | None = None,
    is_web_public: bool | None = None,
    history_public_to_subscribers: bool | None = None,
    is_default_stream: bool | None = None,
    message_retention_days: str | int | None = None,
    folder_id: int | None = _NOT_SENT,
    topics_policy: str | None = None,
    **group_settings: GroupSettingUpdate | None,
) -> JsonDict:
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    changes = ChannelChanges(
        new_name=new_name,
        description=description,
        is_private=is_private,
        is_web_public=is_web_public,
        history_public_to_subscribers=history_public_to_subscribers,
        is_default_stream=is_default_stream,
        message_retention_days=UNCHANGED
        if message_retention_days is None
        else parse_message_retention_days(message_retention_days),
        folder_id=folder_id,
        topics_policy=topics_policy,
        group_settings=given_group_settings(group_settings),
    )
    do_update_stream(ctx.session, stream, ctx.requester, changes)
    return {}


@router.delete("/streams/{stream_id:int}")
def archive_stream(ctx: Ctx, stream_id: int) -> JsonDict:
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    do_archive_stream(ctx.session, stream, ctx.requester)
    return {}


@router.get("/get_stream_id")
def get_stream_id(ctx: Ctx, stream: str) -> JsonDict:
    return {"stream_id": access_stream_by_name(ctx.session, ctx.requester, stream).id}


@router.get("/streams/{stream_id:int}/members")
def get_stream_members(ctx: Ctx, stream_id: int) -> JsonDict:
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    return {"subscribers": sorted(subscriber_ids(ctx.session, stream))}


@router.get("/default_streams")
def list_default_streams(ctx: Ctx) -> JsonDict:
    return {"default_streams": default_stream_ids(ctx.session, ctx.requester.realm_id)}


@router.post("/default_streams")
def add_default_stream(ctx: Ctx, stream_id: int) -> JsonDict:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    do_add_default_stream(ctx.session, access_stream_by_id(ctx.session, ctx.requester, stream_id))
    return {}


@router.delete("/default_streams")
def remove_default_stream(ctx: Ctx, stream_id: int) -> JsonDict:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    do_remove_default_stream(ctx.session, access_stream_by_id(ctx.session, ctx.requester, stream_id))
    return {}
