"""Realm exports: GET/POST /export/realm, DELETE /export/realm/{export_id}, consents; the files."""

from __future__ import annotations

import re

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from palaver.actions.realm_export import do_delete_realm_export, do_request_realm_export
from palaver.api.context import Ctx
from palaver.api.responses import error_response
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.user_content import on_realm_host
from palaver.lib.exceptions import OrganizationAdministratorRequiredError, ResourceNotFoundError
from palaver.lib.ids import id_in_text
from palaver.lib.realm import get_realm
from palaver.lib.realm_export import EXPORT_URL_PREFIX, export_consents, realm_exports
from palaver.lib.storage import make_storage
from palaver.lib.user_content import OCTET_STREAM, content_security_policy
from palaver.models.realm_export import RealmExportType
from palaver.services import Services

router = ApiRouter()


def _require_admin(ctx: Ctx) -> None:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


@router.get("/export/realm")
def list_realm_exports(ctx: Ctx) -> JsonDict:
    _require_admin(ctx)
    realm = get_realm(ctx.session, ctx.requester.realm_id)
    return {"exports": realm_exports(ctx.session, ctx.services.settings, realm)}


@router.post("/export/realm")
def create_realm_export(ctx: Ctx, export_type: int = RealmExportType.PUBLIC) -> JsonDict:
    return {"id": do_request_realm_export(ctx.session, ctx.services.settings, ctx.requester, export_type)}


@router.delete("/export/realm/{export_id:int}")
def delete_realm_export(ctx: Ctx, export_id: int) -> JsonDict:
    settings = ctx.services.settings
    do_delete_realm_export(ctx.session, settings, make_storage(settings), ctx.requester, export_id)
    return {}


@router.get("/export/realm/consents")
def list_export_consents(ctx: Ctx) -> JsonDict:
    _require_admin(ctx)
    return {"export_consents": export_consents(ctx.session, ctx.requester.realm_id)}


# The archives, at the export_url the API reports. The key holds an unguessable token, as
# Zulip's export URLs do, so a download link works in a browser without credentials.
_EXPORT_KEY = re.compile(r"^\d+/exports/[A-Za-z0-9_-]{32}/[A-Za-z0-9._-]+\.zip$")


def _serve_export(services: Services, host: str, key: str) -> Response:
    realm_id = id_in_text(key.split("/", 1)[0])
    # The link answers only on the host of the organization it exports.
    if not _EXPORT_KEY.match(key) or realm_id is None or not on_realm_host(services, host, realm_id):
        return error_response(ResourceNotFoundError())
    storage = make_storage(services.settings)
    headers = {
        "Content-Disposition": f'attachment; filename="{key.rsplit("/", 1)[-1]}"',
        "Content-Security-Policy": content_security_policy(OCTET_STREAM),
        "X-Content-Type-Options": "nosniff",
    }
    path = storage.local_path(key)
    if path is not None:
        return FileResponse(path, media_type="application/zip", headers=headers)
    data = storage.read(key)
    if data is None:
        return error_response(ResourceNotFoundError())
    return Response(data, media_type="application/zip", headers=headers)


def export_file_routes(services: Services) -> list[Route]:
    async def serve(request: Request) -> Response:
        host = request.headers.get("host", "")
        return await run_in_threadpool(_serve_export, services, host, request.path_params["key"])

    return [Route(EXPORT_URL_PREFIX + "{key:path}", serve, methods=["GET", "HEAD"])]
