"""Incoming webhooks: ``POST /api/v1/external/<integration>``.

Mounted by ``create_app`` beside the API routers, because an integration reads the raw body
(JSON arrays, plain text, Slack's form field) and provider headers, which the parameter
pipeline of ``routing.py`` does not keep. The sender authenticates with the ``api_key`` URL
parameter (what providers can be given) or HTTP Basic; any user's key works, as in Zulip,
though incoming-webhook bots are what it is meant for.

Failures answer with the error envelope and one log line: an unknown integration is a 404,
an unsupported event or a payload missing what the provider documents a 400, never a 500.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.messages import SendContext
from palaver.actions.webhooks import do_send_webhook_notifications
from palaver.api.authentication import authenticate
from palaver.api.responses import error_response, exception_response, json_response
from palaver.lib.exceptions import JsonableError, UnauthorizedError
from palaver.lib.rate_limit import raise_if_limited
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.users import requester_user
from palaver.lib.webhooks import user_for_webhook_key, wanted_notifications
from palaver.models import UserProfile
from palaver.services import Services
from palaver.webhooks import INTEGRATIONS
from palaver.webhooks.base import Integration, MalformedPayloadError, UnsupportedEventError, WebhookRequest

logger = logging.getLogger("palaver.webhooks")

MAX_BODY_BYTES = 5 * 1024 * 1024
WEBHOOK_PATH = "/api/v1/external/{integration}"


def _sender(session: Session, services: Services, request: WebhookRequest, host: str) -> UserProfile:
    api_key = request.params.get("api_key")
    if api_key:
        return user_for_webhook_key(session, services.settings, host, api_key)
    authorization = request.header("authorization")
    if not authorization:
        raise UnauthorizedError("Missing 'api_key' argument")
    requester, _ = authenticate(session, services, "required", host, authorization)
    assert requester is not None
    return requester_user(session, requester)


def _handle(services: Services, integration: Integration, request: WebhookRequest, host: str) -> Response:
    with services.db.session() as session:
        sender = _sender(session, services, request, host)
        raise_if_limited(
            services.rate_limiter.hit(f"user:{sender.id}", services.settings.api_rate_limit), "api"
        )
        try:
            result = integration.handler(request)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            logger.warning("webhook %s: payload lacks what the provider documents: %r", integration.name, e)
            raise MalformedPayloadError(
                f"Malformed payload for the {integration.display_name} webhook"
            ) from e
        notes = wanted_notifications(
            result, request.params.get("only_events"), request.params.get("exclude_events")
        )
        realm = sender.realm
        context = SendContext(
            realm_url=realm_url(services.settings, realm),
            email_host=realm_email_host(services.settings, realm),
            client=f"Webhook/{integration.name}",
        )
        ids = do_send_webhook_notifications(
            session,
            sender,
            notes,
            stream=request.params.get("stream"),
            topic=request.params.get("topic") or request.params.get("subject"),
            context=context,
        )
    return json_response({"result": "success", "msg": "", "message_ids": ids})


def webhook_routes(services: Services) -> list[Route]:
    async def receive(request: Request) -> Response:
        name = str(request.path_params["integration"])
        integration = INTEGRATIONS.get(name)
        if integration is None:
            return error_response(JsonableError(f"No such integration: {name}", status=404))
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return error_response(JsonableError("The request body is too large", status=413))
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return error_response(JsonableError("The request body is too large", status=413))
        hook = WebhookRequest(
            body=body,
            headers={k.lower(): v for k, v in request.headers.items()},
            params=dict(request.query_params),
        )
        try:
            return await run_in_threadpool(
                _handle, services, integration, hook, request.headers.get("host", "")
            )
        except UnsupportedEventError as e:
            logger.info("webhook %s: %s", name, e.msg)
            return error_response(e)
        except JsonableError as e:
            return error_response(e)
        except Exception as exc:
            return exception_response(exc, services.outages, f"webhook {name}")

    return [Route(WEBHOOK_PATH, receive, methods=["POST"])]
