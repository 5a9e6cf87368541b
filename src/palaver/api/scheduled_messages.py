"""Scheduled messages: list, schedule, edit, cancel (the user's own only)."""

from __future__ import annotations

from typing import Annotated, cast

from palaver.actions.messages import SendContext
from palaver.actions.scheduled_messages import (
    do_delete_scheduled_message,
    do_edit_scheduled_message,
    do_schedule_message,
)
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import client_name_from_user_agent, parse_send_target
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.scheduled_messages import (
    check_delivery_time,
    format_scheduled_message,
    get_scheduled_messages,
)

router = ApiRouter()

_TYPES = ("direct", "private", "stream", "channel")


def _context(ctx: Ctx, read_by_sender: bool | None = None) -> SendContext:
    settings = ctx.services.settings
    return SendContext(
        realm_url=realm_url(settings, realm_settings(ctx.session, ctx.realm_id)),
        email_host=realm_email_host(settings, realm_settings(ctx.session, ctx.realm_id)),
        client=client_name_from_user_agent(ctx.user_agent),
        read_by_sender=read_by_sender,
    )


def _check_type(message_type: str | None) -> None:
    if message_type is not None and message_type not in _TYPES:
        raise JsonableError("Invalid type")


@router.get("/scheduled_messages")
def list_scheduled_messages(ctx: Ctx) -> JsonDict:
    items = get_scheduled_messages(ctx.session, ctx.requester.user_id)
    return {"scheduled_messages": [format_scheduled_message(item) for item in items]}


@router.post("/scheduled_messages")
def create_scheduled_message(
    ctx: Ctx,
    message_type: Annotated[str, ApiParam(name="type")],
    to: int | list[int],
    content: str,
    scheduled_delivery_timestamp: int,
    topic: str | None = None,
    read_by_sender: bool | None = None,
) -> JsonDict:
    _check_type(message_type)
    deliver_at = check_delivery_time(scheduled_delivery_timestamp)
    target = parse_send_target(message_type, cast("int | list[int | str]", to), topic)
    item = do_schedule_message(
        ctx.session, ctx.requester, target, content, deliver_at, _context(ctx, read_by_sender)
    )
    return {"scheduled_message_id": item.id}


@router.patch("/scheduled_messages/{scheduled_message_id:int}")
def edit_scheduled_message(
    ctx: Ctx,
    scheduled_message_id: int,
    message_type: Annotated[str | None, ApiParam(name="type")] = None,
    to: int | list[int] | None = None,
    content: str | None = None,
    topic: str | None = None,
    scheduled_delivery_timestamp: int | None = None,
) -> JsonDict:
    _check_type(message_type)
    if message_type in ("stream", "channel") and topic is None:
        raise JsonableError("Topic required when updating scheduled message type to stream.")
    if message_type is not None and to is None:
        raise JsonableError("Recipient required when updating type of scheduled message.")
    deliver_at = None
    if scheduled_delivery_timestamp is not None:
        deliver_at = check_delivery_time(scheduled_delivery_timestamp)
    do_edit_scheduled_message(
        ctx.session,
        ctx.requester,
        scheduled_message_id,
        message_type=message_type,
        to=to,
        topic=topic,
        content=content,
        deliver_at=deliver_at,
        context=_context(ctx),
    )
    return {}


@router.delete("/scheduled_messages/{scheduled_message_id:int}")
def delete_scheduled_message(ctx: Ctx, scheduled_message_id: int) -> JsonDict:
    do_delete_scheduled_message(ctx.session, ctx.requester, scheduled_message_id)
    return {}
