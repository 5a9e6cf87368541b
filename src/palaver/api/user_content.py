"""Serving user content over HTTP: who is asking, and the response every piece goes out as.

Uploads and their thumbnails take the credentials Zulip clients send for them: HTTP Basic
(the apps), the ``api_key`` query parameter (a link opened in a browser or media player), or
the web client's session cookie (its ``<img>`` and ``<video>`` tags). Each is bound to the
host's organization: a cookie, key or header of another organization is no credential here.
The response's type, disposition and headers come from ``lib/user_content.py``.
"""

from __future__ import annotations

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from palaver.api.authentication import authenticate
from palaver.api.responses import error_response
from palaver.config import Settings
from palaver.lib.attachments import TEMPORARY_URL_PREFIX, user_for_api_key
from palaver.lib.exceptions import ResourceNotFoundError, UnauthorizedError
from palaver.lib.realm import get_realm_for_host, is_user_content_host
from palaver.lib.storage import StorageKeyError, make_storage
from palaver.lib.user_content import host_serves_realm, served_as, user_content_headers
from palaver.lib.web_sessions import SESSION_COOKIE
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from palaver.web.sessions import session_user


def content_viewer(session: Session, services: Services, request: Request) -> Requester:
    """The active user asking for a file on this host, or UnauthorizedError (401)."""
    host = request.headers.get("host", "")
    header = request.headers.get("authorization")
    api_key = request.query_params.get("api_key")
    cookie = request.cookies.get(SESSION_COOKIE)
    user: UserProfile | None = None
    if header:
        requester, _ = authenticate(session, services, "required", host, header)
        if requester is None:
            raise UnauthorizedError()
        return requester
    if api_key:
        realm = get_realm_for_host(session, services.settings, host)
        user = user_for_api_key(session, realm.id, api_key)
    elif cookie:
        # session_user answers only for a cookie of this host's organization.
        found = session_user(session, services, host, cookie)
        if found is not None and found[1].is_active and not found[1].realm.deactivated:
            user = found[1]
    if user is None:
        raise UnauthorizedError()
    return Requester.of(user)


def on_realm_host(services: Services, host: str, realm_id: int) -> bool:
    """Whether ``host`` is organization ``realm_id``'s own, the only host its pictures,
    emoji and exports answer on (lib/user_content.host_serves_realm, in a session of its own)."""
    with services.db.session() as session:
        return host_serves_realm(session, services.settings, host, realm_id)


def user_content_response(data: bytes, file_name: str | None, cache_control: str) -> Response:
    """``data`` as user content: its type from its bytes, inline only if that type is safe."""
    served = served_as(data, file_name or "")
    return Response(
        data, media_type=served.content_type, headers=user_content_headers(served, file_name, cache_control)
    )


def stored_picture_response(services: Services, host: str, realm_id: int, key: str) -> Response:
    """A stored avatar, logo, icon or emoji image of organization ``realm_id``: answered only
    on that organization's own host, 404 when it is not stored. Their URLs change with what
    they show (``?version=`` or a hash), so the answer may be cached for a day."""
    if not on_realm_host(services, host, realm_id):
        return error_response(ResourceNotFoundError())
    try:
        data = make_storage(services.settings).read(key)
    except StorageKeyError:
        data = None
    if data is None:
        return error_response(ResourceNotFoundError())
    return user_content_response(data, None, "public, max-age=86400")


def user_content_redirect(url: str) -> Response:
    """To a signed URL on the user-content origin: valid a minute, so never cached."""
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": "private, no-store"})


class UserContentOrigin:
    """ASGI wrapper: on the ``user_content_url`` host only signed upload URLs answer. The
    web app, the API and the sign-in pages are an organization's, never served there."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(TEMPORARY_URL_PREFIX):
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if is_user_content_host(self.settings, host):
                await PlainTextResponse("Not found", status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)
