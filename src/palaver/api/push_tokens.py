"""Legacy push-token registration and POST /mobile_push/test_notification."""

from __future__ import annotations

from palaver.actions.legacy_push import do_add_push_token, do_remove_push_token
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.devices import PushServiceNotConfiguredError
from palaver.lib.exceptions import JsonableError
from palaver.lib.legacy_push import InvalidPushDeviceTokenError, check_app_id, check_token, legacy_targets
from palaver.lib.push import ping_payload, push_targets, relay_client
from palaver.lib.push_service import PushServiceError
from palaver.lib.realm import get_realm
from palaver.timeutil import to_timestamp, utcnow
from palaver.workers.push import Deliverer

router = ApiRouter()


@router.post("/users/me/android_gcm_reg_id")
def add_fcm_token(ctx: Ctx, token: str) -> JsonDict:
    do_add_push_token(ctx.session, ctx.requester, "fcm", check_token("fcm", token))
    return {}


@router.delete("/users/me/android_gcm_reg_id")
def remove_fcm_token(ctx: Ctx, token: str) -> JsonDict:
    do_remove_push_token(ctx.session, ctx.requester, "fcm", check_token("fcm", token))
    return {}


@router.post("/users/me/apns_device_token")
def add_apns_token(ctx: Ctx, token: str, appid: str) -> JsonDict:
    do_add_push_token(ctx.session, ctx.requester, "apns", check_token("apns", token), check_app_id(appid))
    return {}


@router.delete("/users/me/apns_device_token")
def remove_apns_token(ctx: Ctx, token: str) -> JsonDict:
    do_remove_push_token(ctx.session, ctx.requester, "apns", check_token("apns", token))
    return {}


@router.post("/mobile_push/test_notification")
def send_test_notification(ctx: Ctx, token: str | None = None) -> JsonDict:
    """A real test notification through the configured path, to one device (its token, or
    its token ID) or to all of the user's. Sent now, as the person is waiting to see it."""
    services = ctx.services
    if not services.settings.push_configured:
        raise PushServiceNotConfiguredError()
    user_id = ctx.requester.user_id
    if not push_targets(ctx.session, user_id, token) and not legacy_targets(ctx.session, user_id, token):
        raise InvalidPushDeviceTokenError()
    realm = get_realm(ctx.session, ctx.requester.realm_id)
    with relay_client() as client:
        deliverer = Deliverer(services, client)
        payload = ping_payload(deliverer.identity(realm, user_id), to_timestamp(utcnow()))
        try:
            sent = deliverer.send(realm.id, user_id, payload, token_id=token)
        except PushServiceError as e:
            raise JsonableError(f"The push notification service refused the test notification: {e}") from None
    if not sent:
        raise JsonableError("The test notification could not be delivered; see the server's log.")
    return {}
