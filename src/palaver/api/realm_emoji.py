"""Custom emoji: list, upload, deactivate; and serving their images at /user_avatars/.

The images are served outside /api/v1, at the ``source_url`` clients load relative to the
organization's URL, so ``create_app`` mounts ``emoji_image_routes`` beside the API routers.
Like Zulip's, emoji images are public: anyone who knows the URL may load them, on the
organization's own host, as user content (api/user_content.py).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.realm_emoji import do_add_realm_emoji, do_deactivate_realm_emoji
from palaver.api.context import Ctx
from palaver.api.multipart import read_upload
from palaver.api.responses import error_response
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.user_content import stored_picture_response
from palaver.lib.exceptions import ResourceNotFoundError
from palaver.lib.ids import id_in_text
from palaver.lib.realm_emoji import CONTENT_TYPES, realm_emoji_dict
from palaver.lib.storage import make_storage
from palaver.services import Services

router = ApiRouter()


@router.get("/realm/emoji")
def list_realm_emoji(ctx: Ctx) -> JsonDict:
    return {"emoji": realm_emoji_dict(ctx.session, ctx.requester.realm_id)}


@router.post("/realm/emoji/{emoji_name}")
def upload_realm_emoji(ctx: Ctx, emoji_name: str, filename: UploadFile) -> JsonDict:
    settings = ctx.services.settings
    data = read_upload(filename, settings.max_file_upload_size_mib)
    do_add_realm_emoji(ctx.session, make_storage(settings), ctx.requester, emoji_name, data)
    return {}


@router.delete("/realm/emoji/{emoji_name}")
def deactivate_realm_emoji(ctx: Ctx, emoji_name: str) -> JsonDict:
    do_deactivate_realm_emoji(ctx.session, ctx.requester, emoji_name)
    return {}


def _read_image(services: Services, host: str, key: str) -> Response:
    realm_id = id_in_text(key.split("/", 1)[0])
    extension = key.rsplit(".", 1)[-1]
    if realm_id is None or "/emoji/images/" not in key or extension not in CONTENT_TYPES:
        return error_response(ResourceNotFoundError())
    return stored_picture_response(services, host, realm_id, key)


def emoji_image_routes(services: Services) -> list[Route]:
    async def serve(request: Request) -> Response:
        host = request.headers.get("host", "")
        return await run_in_threadpool(_read_image, services, host, request.path_params["key"])

    return [Route("/user_avatars/{key:path}", serve, methods=["GET", "HEAD"])]
