"""Client devices (register at login, remove at logout) and their push registration."""

from __future__ import annotations

from palaver.actions.devices import do_register_device, do_register_push_device, do_remove_device
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.devices import PushServiceNotConfiguredError, parse_push_key, parse_push_token

router = ApiRouter()


@router.post("/register_client_device")
def register_client_device(ctx: Ctx) -> JsonDict:
    return {"device_id": do_register_device(ctx.session, ctx.requester).id}


@router.post("/remove_client_device")
def remove_client_device(ctx: Ctx, device_id: int) -> JsonDict:
    do_remove_device(ctx.session, ctx.requester, device_id)
    return {}


@router.post("/mobile_push/register")
def register_push_device(
    ctx: Ctx,
    device_id: int,
    push_key_id: int | None = None,
    push_key: str | None = None,
    token_kind: str | None = None,
    token_id: str | None = None,
    bouncer_public_key: str | None = None,
    encrypted_push_registration: str | None = None,
) -> JsonDict:
    settings = ctx.services.settings
    if not settings.push_configured:
        raise PushServiceNotConfiguredError()
    key = parse_push_key(push_key, push_key_id)
    token = parse_push_token(token_kind, token_id, bouncer_public_key, encrypted_push_registration)
    # Through Zulip's service the token waits for the push worker to forward it.
    via_service = settings.push_service_url is not None
    do_register_push_device(
        ctx.session, ctx.requester, device_id, key=key, token=token, via_service=via_service
    )
    return {}
