"""Serving thumbnails at /user_uploads/thumbnail/<path_id>/<format>, and the loading picture.

A thumbnail is served to whoever may see the original upload, with the same credentials
(HTTP Basic, or ``api_key`` in the query). Until it is made (or if it cannot be), the
original is served instead, so a client asking early still gets a picture.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.api.routing import authenticate, error_response, internal_error_response
from palaver.lib.attachments import file_for_user, user_for_api_key
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError, UnauthorizedError
from palaver.lib.realm import get_realm_for_host
from palaver.lib.storage import make_storage
from palaver.lib.thumbnails import LOADING_PLACEHOLDER, format_by_name, thumbnail_key
from palaver.services import Services

# A grey ring with a turning arc: drawn here, no image file shipped.
_LOADER_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" viewBox="0 0 40 40">'
    '<circle cx="20" cy="20" r="16" fill="none" stroke="#00000022" stroke-width="4"/>'
    '<path d="M20 4a16 16 0 0 1 16 16" fill="none" stroke="#000000aa" stroke-width="4">'
    '<animateTransform attributeName="transform" type="rotate" from="0 20 20" to="360 20 20" '
    'dur="0.9s" repeatCount="indefinite"/></path></svg>'
)


def _serve(services: Services, request: Request, path_id: str, name: str) -> Response:
    fmt = format_by_name(name)
    if fmt is None:
        return error_response(ResourceNotFoundError())
    session = services.db.session()
    try:
        host = request.headers.get("host", "")
        header = request.headers.get("authorization")
        api_key = request.query_params.get("api_key")
        if header:
            _, user = authenticate(session, services, "required", host, header)
        elif api_key:
            user = user_for_api_key(session, get_realm_for_host(session, services.settings, host).id, api_key)
        else:
            user = None
        if user is None:
            raise UnauthorizedError()
        served = file_for_user(session, user, path_id)
        storage = make_storage(services.settings)
        data = storage.read(thumbnail_key(served.path_id, fmt.name))
        content_type = f"image/{fmt.extension}"
        if data is None:
            data = storage.read(served.path_id)
            content_type = served.content_type or "application/octet-stream"
            if data is None or not content_type.startswith("image/"):
                raise JsonableError("File not found", status=404)
        return Response(
            data,
            media_type=content_type,
            headers={
                "Content-Disposition": f"inline; filename*=UTF-8''{quote(served.file_name)}",
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, max-age=60",
            },
        )
    except JsonableError as e:
        return error_response(e)
    except Exception:
        session.rollback()
        return internal_error_response()
    finally:
        session.close()


def thumbnail_routes(services: Services) -> list[Route]:
    async def thumbnail(request: Request) -> Response:
        path_id, _, name = str(request.path_params["path"]).rpartition("/")
        return await run_in_threadpool(_serve, services, request, path_id, name)

    async def loader(request: Request) -> Response:
        return Response(
            _LOADER_SVG, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"}
        )

    return [
        Route("/user_uploads/thumbnail/{path:path}", thumbnail, methods=["GET"]),
        Route(LOADING_PLACEHOLDER, loader, methods=["GET", "HEAD"]),
    ]
