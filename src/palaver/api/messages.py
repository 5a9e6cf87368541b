"""Messages: send, fetch (by range in a narrow, or by ID), delete, render, topics."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from palaver.actions.message_delete import do_delete_message
from palaver.actions.messages import SendContext, do_send_message
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import RealmRow, realm_settings
from palaver.lib.channels import access_stream_by_id
from palaver.lib.exceptions import IncompatibleParametersError, JsonableError, MissingArgumentError
from palaver.lib.message_fetch import (
    MAX_MESSAGES_PER_FETCH,
    get_message,
    get_messages,
    messages_matching_narrow,
    parse_anchor,
)
from palaver.lib.message_format import FormatOptions
from palaver.lib.message_render import render_content
from palaver.lib.message_send import client_name_from_user_agent, parse_send_target
from palaver.lib.narrow import narrow_anchor
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.topics import get_topic_history

router = ApiRouter()

NonNegative = Annotated[int, Field(ge=0)]


def _cached_realm(ctx: Ctx) -> RealmRow:
    """The user's realm from the realm cache: these views need two of its columns."""
    return realm_settings(ctx.session, ctx.realm_id)


def _realm_url(ctx: Ctx) -> str:
    return realm_url(ctx.services.settings, _cached_realm(ctx))


@router.post("/messages")
def send_message(
    ctx: Ctx,
    message_type: Annotated[str, ApiParam(name="type")],
    to: str | int | list[int | str],
    content: str,
    topic: Annotated[str | None, ApiParam(aliases=("subject",))] = None,
    queue_id: str | None = None,
    local_id: str | None = None,
    read_by_sender: bool | None = None,
) -> JsonDict:
    target = parse_send_target(message_type, to, topic)
    realm = _cached_realm(ctx)
    context = SendContext(
        realm_url=realm_url(ctx.services.settings, realm),
        email_host=realm_email_host(ctx.services.settings, realm),
        client=client_name_from_user_agent(ctx.user_agent),
        local_id=local_id,
        sender_queue_id=queue_id,
        read_by_sender=read_by_sender,
    )
    return {"id": do_send_message(ctx.session, ctx.requester, target, content, context)}


@router.get("/messages")
def fetch_messages(
    ctx: Ctx,
    anchor: str | int | None = None,
    include_anchor: bool | None = None,
    num_before: NonNegative | None = None,
    num_after: NonNegative | None = None,
    narrow: list[Any] | None = None,
    client_gravatar: bool = True,
    apply_markdown: bool = True,
    use_first_unread_anchor: bool = False,
    message_ids: list[int] | None = None,
    allow_empty_topic_name: bool = False,
) -> JsonDict:
    options = FormatOptions(apply_markdown, client_gravatar, allow_empty_topic_name)
    if message_ids is not None:
        range_params = {
            "anchor": anchor is not None,
            "include_anchor": include_anchor is not None,
            "num_before": num_before is not None,
            "num_after": num_after is not None,
            "use_first_unread_anchor": use_first_unread_anchor,
        }
        conflicting = [name for name, given in range_params.items() if given]
        if conflicting:
            raise IncompatibleParametersError(sorted(["message_ids", *conflicting]))
        return get_messages(
            ctx.session,
            ctx.requester,
            narrow=narrow,
            anchor=None,
            include_anchor=True,
            num_before=0,
            num_after=0,
            message_ids=message_ids,
            options=options,
        )
    if num_before is None:
        raise MissingArgumentError("num_before")
    if num_after is None:
        raise MissingArgumentError("num_after")
    if num_before + num_after > MAX_MESSAGES_PER_FETCH:
        raise JsonableError(f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).")
    include = include_anchor is not False
    if num_before > 0 and num_after > 0 and not include:
        raise JsonableError("The anchor can only be excluded at an end of the range")
    # History and search tolerate the read replica's lag (messages others sent in the last
    # moments reach the client as events); a fetch of messages by ID is of ones the client
    # has just heard of, so it stays on the primary, as do the user's reads after a write.
    requester = ctx.requester
    with ctx.services.db.read_session(ctx.session, requester.user_id) as session:
        return get_messages(
            session,
            requester,
            narrow=narrow,
            # A "near" term says where to open the view when the client gives no anchor.
            anchor=parse_anchor(
                anchor if anchor is not None else narrow_anchor(narrow), use_first_unread_anchor
            ),
            include_anchor=include,
            num_before=num_before,
            num_after=num_after,
            message_ids=None,
            options=options,
        )


@router.get("/messages/{message_id:int}")
def fetch_message(
    ctx: Ctx, message_id: int, apply_markdown: bool = True, allow_empty_topic_name: bool = False
) -> JsonDict:
    options = FormatOptions(
        apply_markdown, client_gravatar=False, allow_empty_topic_name=allow_empty_topic_name
    )
    message, raw_content = get_message(ctx.session, ctx.requester, message_id, options)
    return {"raw_content": raw_content, "message": message}


@router.delete("/messages/{message_id:int}")
def delete_message(ctx: Ctx, message_id: int) -> JsonDict:
    do_delete_message(ctx.session, ctx.requester, message_id)
    return {}


@router.post("/messages/render")
def render_message(ctx: Ctx, content: str) -> JsonDict:
    return {"rendered": render_content(ctx.session, ctx.requester, content, _realm_url(ctx)).html}


@router.get("/messages/matches_narrow")
def matches_narrow(ctx: Ctx, msg_ids: list[int], narrow: list[Any]) -> JsonDict:
    return {"messages": messages_matching_narrow(ctx.session, ctx.requester, msg_ids, narrow)}


@router.get("/users/me/{stream_id:int}/topics")
def get_topics(ctx: Ctx, stream_id: int, allow_empty_topic_name: bool = False) -> JsonDict:
    # A topic others started in the last moments reaches the client as an event: the
    # replica's lag is tolerable here too (the user's own, after a write, is fenced).
    requester = ctx.requester
    with ctx.services.db.read_session(ctx.session, requester.user_id) as session:
        stream = access_stream_by_id(session, requester, stream_id, require_content_access=True)
        topics = get_topic_history(session, requester, stream, allow_empty_topic_name=allow_empty_topic_name)
    return {"topics": topics}
