"""Uploading files, temporary URLs for them, and serving them at /user_uploads/.

The files themselves are served outside /api/v1, at the URLs message content links to,
so ``create_app`` mounts ``upload_file_routes`` beside the API routers: those responses are
the file's bytes, not a JSON envelope, and they also accept the ``api_key`` query parameter
(how Zulip clients open uploads in a browser or media player).
"""

from __future__ import annotations

import mimetypes
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.attachments import do_upload_file
from palaver.api.multipart import read_upload
from palaver.api.routing import (
    ApiRouter,
    Ctx,
    JsonDict,
    authenticate,
    error_response,
    internal_error_response,
)
from palaver.lib.attachments import (
    ServedFile,
    accessible_attachment,
    file_for_temporary_token,
    file_for_user,
    temporary_url,
    upload_url,
    user_for_api_key,
)
from palaver.lib.exceptions import JsonableError, UnauthorizedError
from palaver.lib.realm import get_realm_for_host
from palaver.lib.storage import make_storage
from palaver.lib.web_sessions import SESSION_COOKIE
from palaver.services import Services
from palaver.web.sessions import session_user

router = ApiRouter()

# Shown in the browser; anything else downloads, so an uploaded page cannot run as ours.
_INLINE_TYPES = ("image/", "video/", "audio/", "application/pdf", "text/plain")


def effective_content_type(file_name: str, declared: str | None) -> str:
    """The declared type, unless the client sent none or the generic one (the Python
    bindings send ``application/octet-stream`` for everything): then the file name's."""
    if declared and declared.split(";")[0].strip().lower() != "application/octet-stream":
        return declared
    guessed, _ = mimetypes.guess_type(file_name, strict=False)
    return guessed or "application/octet-stream"


@router.post("/user_uploads")
def upload_file(ctx: Ctx, filename: UploadFile) -> JsonDict:
    settings = ctx.services.settings
    limit = settings.max_file_upload_size_mib
    data = read_upload(
        filename, limit, f"File is larger than this server's configured maximum upload size ({limit} MiB)."
    )
    attachment = do_upload_file(
        ctx.session,
        make_storage(settings),
        ctx.me,
        filename.filename or "uploaded-file",
        data,
        effective_content_type(filename.filename or "", filename.content_type),
    )
    url = upload_url(attachment.path_id)
    return {"uri": url, "url": url, "filename": attachment.file_name}


@router.get("/user_uploads/{realm_id_str}/{filename:path}")
def get_file_temporary_url(ctx: Ctx, realm_id_str: str, filename: str) -> JsonDict:
    attachment = accessible_attachment(ctx.session, ctx.me, realm_id_str, filename)
    return {"url": temporary_url(attachment)}


# Serving the files ----------------------------------------------------------------------------


def _file_response(services: Services, served: ServedFile) -> Response:
    data = make_storage(services.settings).read(served.path_id)
    if data is None:
        raise JsonableError("File not found", status=404)
    content_type = effective_content_type(served.file_name, served.content_type)
    disposition = "inline" if content_type.startswith(_INLINE_TYPES) else "attachment"
    return Response(
        data,
        media_type=content_type,
        headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(served.file_name)}",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, max-age=60",
        },
    )


def _serve_authenticated(
    services: Services,
    host: str,
    header: str | None,
    api_key: str | None,
    path_id: str,
    session_token: str | None = None,
) -> Response:
    session = services.db.session()
    try:
        if header:
            _, user = authenticate(session, services, "required", host, header)
        elif api_key:
            realm = get_realm_for_host(session, services.settings, host)
            user = user_for_api_key(session, realm.id, api_key)
        elif session_token:
            # The web client's <img> tags: the browser sends its session cookie.
            found = session_user(session, services, host, session_token)
            user = found[1] if found is not None and found[1].is_active else None
        else:
            user = None
        if user is None:
            raise UnauthorizedError()
        return _file_response(services, file_for_user(session, user, path_id))
    except JsonableError as e:
        return error_response(e)
    except Exception:
        session.rollback()
        return internal_error_response()
    finally:
        session.close()


def _serve_temporary(services: Services, token: str) -> Response:
    session = services.db.session()
    try:
        return _file_response(services, file_for_temporary_token(session, token))
    except JsonableError as e:
        return error_response(e)
    except Exception:
        session.rollback()
        return internal_error_response()
    finally:
        session.close()


def upload_file_routes(services: Services) -> list[Route]:
    async def serve_file(request: Request) -> Response:
        params: dict[str, Any] = request.path_params
        return await run_in_threadpool(
            _serve_authenticated,
            services,
            request.headers.get("host", ""),
            request.headers.get("authorization"),
            request.query_params.get("api_key"),
            f"{params['realm_id']}/{params['path']}",
            request.cookies.get(SESSION_COOKIE),
        )

    async def serve_temporary(request: Request) -> Response:
        return await run_in_threadpool(_serve_temporary, services, str(request.path_params["token"]))

    return [
        Route("/user_uploads/temporary/{token}/{filename:path}", serve_temporary, methods=["GET"]),
        Route("/user_uploads/{realm_id:int}/{path:path}", serve_file, methods=["GET"]),
    ]
