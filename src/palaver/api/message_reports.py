"""POST /messages/{message_id}/report."""

from __future__ import annotations

from palaver.actions.message_reports import do_report_message
from palaver.actions.messages import SendContext
from palaver.api.channels import email_host
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.rate_limit import raise_if_limited
from palaver.lib.realm import realm_url

router = ApiRouter()


@router.post("/messages/{message_id:int}/report")
def report_message(ctx: Ctx, message_id: int, report_type: str, description: str = "") -> JsonDict:
    rule = ctx.services.settings.message_report_rate_limit
    hit = ctx.services.rate_limiter.hit(f"message_report:{ctx.requester.user_id}", rule)
    raise_if_limited(hit, "message_report")
    context = SendContext(
        realm_url=realm_url(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id)),
        email_host=email_host(ctx),
    )
    do_report_message(ctx.session, ctx.requester, message_id, report_type, description, context)
    return {}
