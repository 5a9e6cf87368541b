"""Invitations: email invitations and reusable links (GET/POST/DELETE /invites...)."""

from __future__ import annotations

from palaver.actions.invites import (
    do_create_multiuse_invite,
    do_invite_users,
    do_resend_invite,
    do_revoke_invite,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.invites import (
    DEFAULT_INVITE_EXPIRY_MINUTES,
    access_email_invite,
    access_multiuse_invite,
    format_invite,
    join_path,
    visible_invites,
)
from palaver.lib.realm import realm_url

router = ApiRouter()

# Absent and null differ: absent takes the server's default, null never expires.
_DEFAULT = -1


def _expiry_minutes(value: int | None) -> int | None:
    return DEFAULT_INVITE_EXPIRY_MINUTES if value == _DEFAULT else value


@router.get("/invites")
def get_invites(ctx: Ctx) -> JsonDict:
    url = realm_url(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id))
    return {"invites": [format_invite(i, url) for i in visible_invites(ctx.session, ctx.requester)]}


@router.post("/invites")
def send_invites(
    ctx: Ctx,
    invitee_emails: str,
    stream_ids: list[int],
    invite_as: int = 400,
    invite_expires_in_minutes: int | None = _DEFAULT,
    include_realm_default_subscriptions: bool = False,
    notify_referrer_on_join: bool = True,
) -> JsonDict:
    outcome = do_invite_users(
        ctx.session,
        ctx.requester,
        invitee_emails,
        invite_as=invite_as,
        stream_ids=stream_ids,
        include_realm_default_subscriptions=include_realm_default_subscriptions,
        notify_referrer_on_join=notify_referrer_on_join,
        expires_in_minutes=_expiry_minutes(invite_expires_in_minutes),
    )
    if outcome.skipped:
        # The others' invitations are committed; the reference reports the skipped ones.
        msg = (
            "Some of those addresses are already using Zulip, so we didn't send them an invitation. "
            "We did send invitations to everyone else!"
            if outcome.sent
            else "We weren't able to invite anyone."
        )
        raise JsonableError(
            msg,
            code="INVITATION_FAILED",
            errors=[list(s) for s in outcome.skipped],
            sent_invitations=bool(outcome.sent),
            license_limit_reached=False,
            daily_limit_reached=False,
        )
    return {}


@router.post("/invites/multiuse")
def create_invite_link(
    ctx: Ctx,
    invite_as: int = 400,
    invite_expires_in_minutes: int | None = _DEFAULT,
    stream_ids: list[int] | None = None,
    include_realm_default_subscriptions: bool = False,
) -> JsonDict:
    invite = do_create_multiuse_invite(
        ctx.session,
        ctx.requester,
        invite_as=invite_as,
        stream_ids=stream_ids or [],
        include_realm_default_subscriptions=include_realm_default_subscriptions,
        expires_in_minutes=_expiry_minutes(invite_expires_in_minutes),
    )
    return {
        "invite_link": realm_url(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id))
        + join_path(invite)
    }


@router.delete("/invites/{invite_id:int}")
def revoke_email_invite(ctx: Ctx, invite_id: int) -> JsonDict:
    do_revoke_invite(ctx.session, access_email_invite(ctx.session, ctx.requester, invite_id))
    return {}


@router.delete("/invites/multiuse/{invite_id:int}")
def revoke_invite_link(ctx: Ctx, invite_id: int) -> JsonDict:
    do_revoke_invite(ctx.session, access_multiuse_invite(ctx.session, ctx.requester, invite_id))
    return {}


@router.post("/invites/{invite_id:int}/resend")
def resend_email_invite(ctx: Ctx, invite_id: int) -> JsonDict:
    do_resend_invite(ctx.session, ctx.requester, access_email_invite(ctx.session, ctx.requester, invite_id))
    return {}
