"""Older forms of operations, kept for clients that still use them.

- PATCH /users/me/subscriptions: subscribe and unsubscribe in one request.
- PATCH /users/me/subscriptions/muted_topics: topic muting, mapped onto user topics.
- PATCH /users/{email}: PATCH /users/{user_id} with the user named by email.
"""

from __future__ import annotations

from typing import Annotated

from starlette.convertors import Convertor, register_url_convertor

from palaver.actions.subscriptions_bulk import do_update_subscriptions
from palaver.actions.user_topics import do_set_user_topic_visibility_policy
from palaver.api.channels import email_host
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.subscriptions import SubscriptionRequestItem
from palaver.api.users import ProfileDataItem, update_user
from palaver.lib.channels import access_stream_by_id, access_stream_by_name
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import normalize_topic
from palaver.lib.users import access_user_by_email
from palaver.models.user_topics import VisibilityPolicy

router = ApiRouter()


class _EmailConvertor(Convertor[str]):
    """A path segment that is an email address, so /users/me is not taken for one."""

    regex = "[^/]+@[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("email", _EmailConvertor())


@router.patch("/users/me/subscriptions")
def update_subscriptions(
    ctx: Ctx,
    add: list[SubscriptionRequestItem] | None = None,
    delete: list[str] | None = None,
) -> JsonDict:
    requests = [(item.name, item.description, item.color) for item in add or []]
    return do_update_subscriptions(ctx.session, ctx.requester, add=requests, delete=delete or [])


@router.patch("/users/me/subscriptions/muted_topics")
def mute_topic(
    ctx: Ctx, topic: str, op: str, stream_id: int | None = None, stream: str | None = None
) -> JsonDict:
    if (stream_id is None) == (stream is None):
        raise JsonableError("Please supply 'stream' or 'stream_id'.")
    if op not in ("add", "remove"):
        raise JsonableError("Invalid op")
    if stream_id is not None:
        channel = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    else:
        assert stream is not None
        channel = access_stream_by_name(ctx.session, ctx.requester, stream)
    # Since feature level 170 muting a muted topic (or unmuting an unmuted one) succeeds.
    policy = VisibilityPolicy.MUTED if op == "add" else VisibilityPolicy.INHERIT
    do_set_user_topic_visibility_policy(ctx.session, ctx.requester, channel, normalize_topic(topic), policy)
    return {}


@router.patch("/users/{email:email}")
def update_user_by_email(
    ctx: Ctx,
    email: str,
    full_name: str | None = None,
    role: int | None = None,
    profile_data: list[ProfileDataItem] | None = None,
    new_email: Annotated[str | None, ApiParam(documentation_only=True)] = None,
) -> JsonDict:
    target = access_user_by_email(ctx.session, ctx.requester, email, email_host=email_host(ctx))
    result: JsonDict = update_user(ctx, target.id, full_name, role, profile_data, new_email)
    return result
