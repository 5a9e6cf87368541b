"""Legacy push-token registration and POST /mobile_push/test_notification."""

from __future__ import annotations

from palaver.actions.legacy_push import do_add_push_token, do_remove_push_token
from palaver.api.routing import ApiRouter, Ctx, JsonDict
from palaver.lib.devices import PushServiceNotConfiguredError
from palaver.lib.legacy_push import InvalidPushDeviceTokenError, check_app_id, check_token, legacy_targets
from palaver.lib.push import push_targets, send_push_to_user
from palaver.lib.realm import realm_url
from palaver.timeutil import to_timestamp, utcnow

router = ApiRouter()


@router.post("/users/me/android_gcm_reg_id")
def add_fcm_token(ctx: Ctx, token: str) -> JsonDict:
    do_add_push_token(ctx.session, ctx.me, "fcm", check_token("fcm", token))
    return {}


@router.delete("/users/me/android_gcm_reg_id")
def remove_fcm_token(ctx: Ctx, token: str) -> JsonDict:
    do_remove_push_token(ctx.session, ctx.me, "fcm", check_token("fcm", token))
    return {}


@router.post("/users/me/apns_device_token")
def add_apns_token(ctx: Ctx, token: str, appid: str) -> JsonDict:
    do_add_push_token(ctx.session, ctx.me, "apns", check_token("apns", token), check_app_id(appid))
    return {}


@router.delete("/users/me/apns_device_token")
def remove_apns_token(ctx: Ctx, token: str) -> JsonDict:
    do_remove_push_token(ctx.session, ctx.me, "apns", check_token("apns", token))
    return {}


@router.post("/mobile_push/test_notification")
def send_test_notification(ctx: Ctx, token: str | None = None) -> JsonDict:
    if ctx.services.settings.push_relay_url is None:
        raise PushServiceNotConfiguredError()
    me = ctx.me
    if not push_targets(ctx.session, me.id, token) and not legacy_targets(ctx.session, me.id, token):
        raise InvalidPushDeviceTokenError()
    payload = {
        "event": "test",
        "realm_id": me.realm_id,
        "realm_name": ctx.realm.name,
        "realm_url": realm_url(ctx.services.settings, ctx.realm),
        "user_id": me.id,
        "time": to_timestamp(utcnow()),
    }
    send_push_to_user(ctx.services.db, ctx.services.settings.push_relay_url, me.id, payload, token=token)
    return {}
