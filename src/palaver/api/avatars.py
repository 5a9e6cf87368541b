"""Avatars and organization images: upload/remove, /avatar/ redirects, and serving the pictures.

``/avatar/{user_id or email}`` (and ``/medium``) redirect to the picture as Zulip's do; they
take the same credentials as the API (HTTP Basic, or ``api_key`` in the query), and without
them only organizations open to spectators answer, by user ID. The pictures themselves are at
``/user_avatars/…``, public like Zulip's: uploaded ones behind a random name and only on
their organization's host, generated ones showing nothing but what their URL says; all are
served as user content (api/user_content.py).
"""

from __future__ import annotations

from urllib.parse import urlencode

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from palaver.actions.avatars import (
    do_change_realm_icon,
    do_change_realm_logo,
    do_delete_avatar,
    do_upload_avatar,
)
from palaver.api.authentication import authenticate
from palaver.api.context import Ctx
from palaver.api.multipart import read_upload
from palaver.api.responses import error_response, exception_response
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.user_content import stored_picture_response, user_content_response
from palaver.lib.attachments import user_for_api_key
from palaver.lib.avatars import (
    MAX_AVATAR_FILE_SIZE_MIB,
    avatar_url,
    parse_generated_name,
    render_generated_avatar,
    unknown_user_avatar_url,
)
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError, UnauthorizedError
from palaver.lib.realm import get_realm, get_realm_for_host, realm_email_host
from palaver.lib.realm_images import MAX_ICON_FILE_SIZE_MIB, MAX_LOGO_FILE_SIZE_MIB
from palaver.lib.storage import make_storage
from palaver.lib.users import access_user_by_email, get_realm_user
from palaver.models import Realm, UserProfile
from palaver.models.requester import Requester
from palaver.services import Services

router = ApiRouter()


def _one_file(upload: UploadFile | None, what: str) -> UploadFile:
    if upload is None:
        raise JsonableError(f"You must upload exactly one {what}.")
    return upload


@router.post("/users/me/avatar")
def upload_avatar(ctx: Ctx, file: UploadFile | None = None) -> JsonDict:
    data = read_upload(_one_file(file, "avatar"), MAX_AVATAR_FILE_SIZE_MIB)
    url = do_upload_avatar(ctx.session, make_storage(ctx.services.settings), ctx.me, data)
    return {"avatar_url": url}


@router.delete("/users/me/avatar")
def delete_avatar(ctx: Ctx) -> JsonDict:
    url = do_delete_avatar(ctx.session, make_storage(ctx.services.settings), ctx.me)
    return {"avatar_url": url}


@router.post("/realm/icon")
def upload_realm_icon(ctx: Ctx, file: UploadFile | None = None) -> JsonDict:
    data = read_upload(_one_file(file, "icon"), MAX_ICON_FILE_SIZE_MIB)
    url = do_change_realm_icon(ctx.session, make_storage(ctx.services.settings), ctx.requester, data)
    return {"icon_url": url}


@router.delete("/realm/icon")
def delete_realm_icon(ctx: Ctx) -> JsonDict:
    do_change_realm_icon(ctx.session, make_storage(ctx.services.settings), ctx.requester, None)
    return {}


@router.post("/realm/logo")
def upload_realm_logo(ctx: Ctx, file: UploadFile | None = None, night: bool = False) -> JsonDict:
    data = read_upload(_one_file(file, "logo"), MAX_LOGO_FILE_SIZE_MIB)
    storage = make_storage(ctx.services.settings)
    return {"logo_url": do_change_realm_logo(ctx.session, storage, ctx.requester, data, night=night)}


@router.delete("/realm/logo")
def delete_realm_logo(ctx: Ctx, night: bool = False) -> JsonDict:
    do_change_realm_logo(ctx.session, make_storage(ctx.services.settings), ctx.requester, None, night=night)
    return {}


# /avatar/ redirects ------------------------------------------------------------------------------


def _viewer(services: Services, request: Request, session: Session) -> tuple[Realm, Requester | None]:
    host = request.headers.get("host", "")
    header = request.headers.get("authorization")
    api_key = request.query_params.get("api_key")
    if header:
        requester, _ = authenticate(session, services, "required", host, header)
        assert requester is not None
        return get_realm(session, requester.realm_id), requester
    realm = get_realm_for_host(session, services.settings, host)
    if api_key:
        user = user_for_api_key(session, realm.id, api_key)
        if user is None:
            raise UnauthorizedError()
        return realm, Requester.of(user)
    return realm, None


def _avatar_redirect(services: Services, request: Request, email_or_id: str, medium: bool) -> Response:
    session = services.db.session()
    try:
        realm, viewer = _viewer(services, request, session)
        # ASCII digits only: int() refuses some of what str.isdigit() admits ("²").
        is_id = email_or_id.isascii() and email_or_id.isdigit()
        if viewer is None and (not is_id or not realm.enable_spectator_access or realm.deactivated):
            # As in Zulip: spectators may look avatars up by ID only, and only where allowed.
            raise UnauthorizedError()
        target: UserProfile | None
        if is_id:
            target = get_realm_user(session, realm.id, int(email_or_id))
        else:
            assert viewer is not None
            try:
                host = realm_email_host(services.settings, realm)
                target = access_user_by_email(session, viewer, email_or_id, email_host=host)
            except JsonableError:
                target = None
        if target is not None:
            url = avatar_url(target, medium=medium)
        else:
            url = unknown_user_avatar_url(email_or_id, services.settings.gravatar, medium=medium)
        extra = [(k, v) for k, v in request.query_params.multi_items() if k != "api_key"]
        if extra:
            url += ("&" if "?" in url else "?") + urlencode(extra)
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "private, max-age=300"})
    except JsonableError as e:
        return error_response(e)
    except Exception as exc:
        session.rollback()
        return exception_response(exc, services.outages, request.url.path)
    finally:
        session.close()


# Serving the pictures -------------------------------------------------------------------------


def avatar_routes(services: Services) -> list[Route]:
    """Mounted before the custom emoji route, which serves the rest of /user_avatars/."""

    async def redirect(request: Request) -> Response:
        params = request.path_params
        medium = request.url.path.endswith("/medium")
        return await run_in_threadpool(_avatar_redirect, services, request, str(params["who"]), medium)

    async def uploaded(request: Request) -> Response:
        params = request.path_params
        name = str(params["name"])
        # Avatars and organization images are PNG; link previews' pictures WebP.
        extension = {"avatars": ".png", "realm": ".png", "previews": ".webp"}.get(str(params["kind"]))
        if extension is None or not name.endswith(extension):
            return error_response(ResourceNotFoundError())
        realm_id = int(params["realm_id"])
        key = f"{realm_id}/{params['kind']}/{name}"
        host = request.headers.get("host", "")
        return await run_in_threadpool(stored_picture_response, services, host, realm_id, key)

    async def generated(request: Request) -> Response:
        parsed = parse_generated_name(str(request.path_params["colour"]), str(request.path_params["name"]))
        if parsed is None:
            return error_response(ResourceNotFoundError())
        data = await run_in_threadpool(render_generated_avatar, *parsed)
        return user_content_response(data, None, "public, max-age=3600")

    return [
        Route("/avatar/{who}", redirect, methods=["GET"]),
        Route("/avatar/{who}/medium", redirect, methods=["GET"]),
        Route("/user_avatars/generated/{colour}/{name}", generated, methods=["GET", "HEAD"]),
        Route("/user_avatars/{realm_id:int}/{kind:str}/{name}", uploaded, methods=["GET", "HEAD"]),
    ]
