"""Uploading files, temporary URLs for them, and serving them at /user_uploads/.

The files themselves are served outside /api/v1, at the URLs message content links to,
so ``create_app`` mounts ``upload_file_routes`` beside the API routers: those responses are
the file's bytes, not a JSON envelope, and they also accept the ``api_key`` query parameter
(how Zulip clients open uploads in a browser or media player) and the web client's session
cookie; every response is user content (api/user_content.py: type from the bytes, sandboxed).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.attachments import do_upload_file
from palaver.api.context import Ctx
from palaver.api.multipart import read_upload
from palaver.api.responses import error_response, exception_response
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.user_content import content_viewer, user_content_redirect, user_content_response
from palaver.lib.attachments import (
    ServedFile,
    accessible_attachment,
    file_for_temporary_token,
    file_for_user,
    temporary_url,
    upload_url,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm import get_realm_for_host, is_user_content_host
from palaver.lib.storage import make_storage
from palaver.lib.thumbnails import thumbnail_or_original
from palaver.services import Services

router = ApiRouter()


@router.post("/user_uploads")
def upload_file(ctx: Ctx, filename: UploadFile) -> JsonDict:
    settings = ctx.services.settings
    limit = settings.max_file_upload_size_mib
    data = read_upload(
        filename, limit, f"File is larger than this server's configured maximum upload size ({limit} MiB)."
    )
    # The declared type is not kept: what a file is served as is decided from its bytes.
    attachment = do_upload_file(
        ctx.session, make_storage(settings), ctx.requester, filename.filename or "uploaded-file", data
    )
    url = upload_url(attachment.path_id)
    return {"uri": url, "url": url, "filename": attachment.file_name}


@router.get("/user_uploads/{realm_id_str}/{filename:path}")
def get_file_temporary_url(ctx: Ctx, realm_id_str: str, filename: str) -> JsonDict:
    attachment = accessible_attachment(ctx.session, ctx.requester, realm_id_str, filename)
    return {"url": temporary_url(attachment)}


# Serving the files ----------------------------------------------------------------------------


def _file_response(services: Services, served: ServedFile) -> Response:
    storage = make_storage(services.settings)
    if served.variant is not None:
        data = thumbnail_or_original(storage, served.path_id, served.file_name, served.variant)
    else:
        data = storage.read(served.path_id)
    if data is None:
        raise JsonableError("File not found", status=404)
    return user_content_response(data, served.file_name, "private, max-age=60")


def _served_or_redirected(services: Services, served: ServedFile) -> Response:
    """The file itself; with a user-content origin, a redirect to it there instead."""
    content_url = services.settings.user_content_url
    if content_url is None:
        return _file_response(services, served)
    return user_content_redirect(content_url + temporary_url(served, variant=served.variant))


def _serve_authenticated(services: Services, request: Request, path_id: str) -> Response:
    session = services.db.session()
    try:
        user = content_viewer(session, services, request)
        return _served_or_redirected(services, file_for_user(session, user, path_id))
    except JsonableError as e:
        return error_response(e)
    except Exception as exc:
        session.rollback()
        return exception_response(exc, services.outages, request.url.path)
    finally:
        session.close()


def _serve_temporary(services: Services, host: str, token: str) -> Response:
    settings = services.settings
    session = services.db.session()
    try:
        if is_user_content_host(settings, host):
            # No organization's origin: any organization's files, by their signed URLs only.
            return _file_response(services, file_for_temporary_token(session, token, realm_id=None))
        realm = get_realm_for_host(session, settings, host)
        # A token answers only on the host of the organization whose file it names.
        served = file_for_temporary_token(session, token, realm_id=realm.id)
        return _served_or_redirected(services, served)
    except JsonableError as e:
        return error_response(e)
    except Exception as exc:
        session.rollback()
        return exception_response(exc, services.outages, "a temporary upload URL")
    finally:
        session.close()


def upload_file_routes(services: Services) -> list[Route]:
    async def serve_file(request: Request) -> Response:
        params: dict[str, Any] = request.path_params
        path_id = f"{params['realm_id']}/{params['path']}"
        return await run_in_threadpool(_serve_authenticated, services, request, path_id)

    async def serve_temporary(request: Request) -> Response:
        host = request.headers.get("host", "")
        token = str(request.path_params["token"])
        return await run_in_threadpool(_serve_temporary, services, host, token)

    return [
        Route("/user_uploads/temporary/{token}/{filename:path}", serve_temporary, methods=["GET"]),
        Route("/user_uploads/{realm_id:int}/{path:path}", serve_file, methods=["GET"]),
    ]
