"""Serving thumbnails at /user_uploads/thumbnail/<path_id>/<format>, and the loading picture.

A thumbnail is served to whoever may see the original upload, with the same credentials
(HTTP Basic, ``api_key`` in the query, or the web client's session cookie: its ``<img>``
tags send nothing else) and as user content (api/user_content.py). Until it is made (or if it cannot be), the
original is served instead, so a client asking early still gets a picture.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.api.responses import error_response, exception_response
from palaver.api.user_content import content_viewer, user_content_redirect, user_content_response
from palaver.lib.attachments import file_for_user, temporary_url
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError
from palaver.lib.storage import make_storage
from palaver.lib.thumbnails import LOADING_PLACEHOLDER, format_by_name, thumbnail_or_original
from palaver.lib.user_content import content_security_policy
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
        served = file_for_user(session, content_viewer(session, services, request), path_id)
        content_url = services.settings.user_content_url
        if content_url is not None:
            return user_content_redirect(content_url + temporary_url(served, variant=fmt.name))
        storage = make_storage(services.settings)
        data = thumbnail_or_original(storage, served.path_id, served.file_name, fmt.name)
        if data is None:
            raise JsonableError("File not found", status=404)
        return user_content_response(data, served.file_name, "private, max-age=60")
    except JsonableError as e:
        return error_response(e)
    except Exception as exc:
        session.rollback()
        return exception_response(exc, services.outages, request.url.path)
    finally:
        session.close()


def thumbnail_routes(services: Services) -> list[Route]:
    async def thumbnail(request: Request) -> Response:
        path_id, _, name = str(request.path_params["path"]).rpartition("/")
        return await run_in_threadpool(_serve, services, request, path_id, name)

    async def loader(request: Request) -> Response:
        headers = {
            "Cache-Control": "public, max-age=86400",
            "Content-Security-Policy": content_security_policy("image/svg+xml"),
            "X-Content-Type-Options": "nosniff",
        }
        return Response(_LOADER_SVG, media_type="image/svg+xml", headers=headers)

    return [
        Route("/user_uploads/thumbnail/{path:path}", thumbnail, methods=["GET"]),
        Route(LOADING_PLACEHOLDER, loader, methods=["GET", "HEAD"]),
    ]
