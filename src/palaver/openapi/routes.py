"""Serving the document (``/openapi.json``) and the docs page (``/api/docs``), both public.

The docs page is Swagger UI from the ``swagger-ui-bundle`` package, whose files Palaver serves
itself: the page works offline, with no CDN, and under the same strict content policy as the
other pages (plus inline styles, which Swagger UI's components set).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from palaver.api.responses import error_response
from palaver.api.routing import ApiRouter
from palaver.lib.exceptions import ResourceNotFoundError

DOCUMENT_PATH = "/openapi.json"
DOCS_PATH = "/api/docs"

_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}

_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": _CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

# Relative URLs, so the page also works when Palaver is served under a path prefix.
_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Palaver API</title>
<link rel="stylesheet" href="docs/static/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/static/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui" data-url="..{document}"></div>
<script src="docs/static/swagger-ui-bundle.js"></script>
<script src="docs/static/swagger-ui-standalone-preset.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
""".replace("{document}", DOCUMENT_PATH)

# The page's own script: a file, not inline, so script-src stays 'self'.
_INIT = """\
"use strict";
(function () {
  var node = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: new URL(node.dataset.url, document.baseURI).href,
    domNode: node,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout",
    validatorUrl: null,
  });
})();
"""


def _asset_dir() -> Path:
    import swagger_ui_bundle  # noqa: PLC0415  (with the first asset asked for)

    return Path(str(swagger_ui_bundle.swagger_ui_path))


def openapi_routes(routers: Sequence[ApiRouter], api_prefix: str) -> list[Route]:
    """``/openapi.json`` (and the same under ``api_prefix``), ``/api/docs`` and its files."""
    # Both built on first use, their modules imported then too: most processes never serve
    # them, and the document's builder is ~0.8 MiB of idle memory.
    built: list[bytes] = []
    assets: dict[str, bytes] = {}

    def document_bytes() -> bytes:
        if not built:
            from palaver.openapi.document import build_document  # noqa: PLC0415

            built.append(orjson.dumps(build_document(routers, server_url=api_prefix)))
        return built[0]

    async def document(request: Request) -> Response:
        body = await run_in_threadpool(document_bytes)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-cache"})

    async def page(request: Request) -> Response:
        return HTMLResponse(_PAGE, headers=_PAGE_HEADERS)

    async def init(request: Request) -> Response:
        return Response(_INIT, media_type="text/javascript; charset=utf-8")

    def read_asset(name: str) -> bytes:
        if name not in assets:
            assets[name] = (_asset_dir() / name).read_bytes()
        return assets[name]

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        media_type = _ASSETS.get(name)
        if media_type is None:
            return error_response(ResourceNotFoundError())
        data = await run_in_threadpool(read_asset, name)
        return Response(data, media_type=media_type, headers={"Cache-Control": "public, max-age=86400"})

    return [
        Route(DOCUMENT_PATH, document, methods=["GET"]),
        Route(api_prefix + DOCUMENT_PATH, document, methods=["GET"]),
        Route(DOCS_PATH, page, methods=["GET"]),
        Route(DOCS_PATH + "/init.js", init, methods=["GET"]),
        Route(DOCS_PATH + "/static/{name}", asset, methods=["GET"]),
    ]
