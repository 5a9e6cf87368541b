"""Subscriptions: list, subscribe (creating channels), unsubscribe, personal channel settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from palaver.actions.channel_creation import ChannelRequest, do_subscribe_by_name
from palaver.actions.new_channels import NewChannel
from palaver.actions.subscriptions import (
    PropertyChange,
    do_unsubscribe_by_name,
    do_update_subscription_properties,
)
from palaver.api.channels import (
    announcement_context,
    email_host,
    given_group_settings,
    retention_days,
)
from palaver.api.context import Ctx
from palaver.api.params import with_setting_params
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channels import IncludeSubscribers, access_stream_by_id
from palaver.lib.group_settings import GroupSettingValue
from palaver.lib.subscriptions import (
    format_subscriptions,
    get_subscription,
    get_user_subscriptions,
    principals_to_users,
)
from palaver.lib.users import access_user_by_id
from palaver.models.channels import STREAM_GROUP_SETTINGS

router = ApiRouter()


class SubscriptionRequestItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    color: str | None = None


class SubscriptionPropertyItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stream_id: int
    property: str
    value: bool | str


@router.get("/users/me/subscriptions")
def list_subscriptions(ctx: Ctx, include_subscribers: IncludeSubscribers = False) -> JsonDict:
    pairs = get_user_subscriptions(ctx.session, ctx.requester)
    return {
        "subscriptions": format_subscriptions(ctx.session, pairs, include_subscribers=include_subscribers)
    }


@router.post("/users/me/subscriptions")
@with_setting_params(STREAM_GROUP_SETTINGS, GroupSettingValue)
def subscribe(
    ctx: Ctx,
    subscriptions: list[SubscriptionRequestItem],
    principals: list[int] | list[str] | None = None,
    authorization_errors_fatal: bool = True,
    announce: bool = False,
    invite_only: bool = False,
    is_web_public: bool = False,
    is_default_stream: bool = False,
    history_public_to_subscribers: bool | None = None,
    message_retention_days: str | int | None = None,
    topics_policy: str = "inherit",
    folder_id: int | None = None,
    **group_settings: GroupSettingValue | None,
) -> JsonDict:
    users = (
        principals_to_users(ctx.session, ctx.requester, principals, email_host=email_host(ctx))
        if principals
        else None
    )
    template = NewChannel(
        name="",
        invite_only=invite_only,
        is_web_public=is_web_public,
        history_public_to_subscribers=history_public_to_subscribers,
        message_retention_days=retention_days(message_retention_days),
        topics_policy=topics_policy,
        folder_id=folder_id,
        group_settings=given_group_settings(group_settings),
        is_default_stream=is_default_stream,
    )
    requests = [ChannelRequest(s.name, s.description, s.color) for s in subscriptions]
    result = do_subscribe_by_name(
        ctx.session,
        ctx.requester,
        requests,
        users,
        template=template,
        authorization_errors_fatal=authorization_errors_fatal,
        announce=announcement_context(ctx, announce),
    )
    body: JsonDict = {"subscribed": result.subscribed, "already_subscribed": result.already_subscribed}
    if not authorization_errors_fatal:
        body["unauthorized"] = result.unauthorized
    return body


@router.delete("/users/me/subscriptions")
def unsubscribe(
    ctx: Ctx, subscriptions: list[str], principals: list[int] | list[str] | None = None
) -> JsonDict:
    users = (
        principals_to_users(ctx.session, ctx.requester, principals, email_host=email_host(ctx))
        if principals
        else None
    )
    removed, not_removed = do_unsubscribe_by_name(ctx.session, ctx.requester, subscriptions, users)
    return {"removed": removed, "not_removed": not_removed}


@router.post("/users/me/subscriptions/properties")
def update_subscription_properties(ctx: Ctx, subscription_data: list[SubscriptionPropertyItem]) -> JsonDict:
    changes = [PropertyChange(item.stream_id, item.property, item.value) for item in subscription_data]
    do_update_subscription_properties(ctx.session, ctx.requester, changes)
    return {}


def update_subscription_property(ctx: Ctx, stream_id: int, property: str, value: bool | str) -> JsonDict:
    do_update_subscription_properties(
        ctx.session, ctx.requester, [PropertyChange(stream_id, property, value)]
    )
    return {}


# Clients use both methods for the single-channel form.
router.post("/users/me/subscriptions/{stream_id:int}")(update_subscription_property)
router.patch("/users/me/subscriptions/{stream_id:int}")(update_subscription_property)


@router.get("/users/{user_id:int}/subscriptions/{stream_id:int}")
def get_subscription_status(ctx: Ctx, user_id: int, stream_id: int) -> JsonDict:
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_deactivated=True)
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    sub = get_subscription(ctx.session, target.id, stream)
    return {"is_subscribed": sub is not None and sub.active}
