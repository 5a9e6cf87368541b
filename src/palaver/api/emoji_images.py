"""Unicode emoji pictures and the emoji data file, at the /static/ URLs Zulip clients use.

Public like any static file: no login, long cache lifetimes (a picture never changes for a
given package version; the data file is small and re-read at client start-up).
"""

from __future__ import annotations

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.api.responses import error_response
from palaver.lib.avatars import render_generated_avatar
from palaver.lib.emoji import ZULIP_EXTRA_EMOJI_NAMES, emoji_code_for_name
from palaver.lib.emoji_images import EMOJI_DATA_PATH, EMOJI_SIZE, IMAGE_SETS, emoji_data, emoji_png
from palaver.lib.exceptions import ResourceNotFoundError
from palaver.services import Services

_DAY = 86400


def _png(data: bytes | None) -> Response:
    if data is None:
        return error_response(ResourceNotFoundError())
    return Response(
        data,
        media_type="image/png",
        headers={"Cache-Control": f"public, max-age={30 * _DAY}", "X-Content-Type-Options": "nosniff"},
    )


def emoji_static_routes(services: Services) -> list[Route]:
    async def by_code(request: Request) -> Response:
        emojiset, name = str(request.path_params["emojiset"]), str(request.path_params["name"])
        if emojiset not in IMAGE_SETS or not name.endswith(".png"):
            return error_response(ResourceNotFoundError())
        return _png(await run_in_threadpool(emoji_png, name.removesuffix(".png")))

    async def by_name(request: Request) -> Response:
        # Zulip's own emoji (and, for old clients, any Unicode emoji by name or code).
        name = str(request.path_params["name"]).removesuffix(".png")
        if name in ZULIP_EXTRA_EMOJI_NAMES:
            return _png(await run_in_threadpool(render_generated_avatar, 0, name[:1].upper(), EMOJI_SIZE))
        code = emoji_code_for_name(name) or name
        return _png(await run_in_threadpool(emoji_png, code))

    async def data(request: Request) -> Response:
        body = await run_in_threadpool(lambda: orjson.dumps(emoji_data()))
        return Response(
            body, media_type="application/json", headers={"Cache-Control": "public, max-age=3600"}
        )

    return [
        Route("/static/generated/emoji/images-{emojiset}-64/{name}", by_code, methods=["GET", "HEAD"]),
        Route("/static/generated/emoji/images/emoji/unicode/{name}", by_name, methods=["GET", "HEAD"]),
        Route(EMOJI_DATA_PATH, data, methods=["GET", "HEAD"]),
    ]
