"""Static assets of the web client, served from memory under one content hash.

At start-up every file under ``web/static/`` is read, and one hash of the whole tree names
the URL prefix: ``/static/<hash>/app/main.js``. Each file is compressed (gzip and brotli)
once per process, when it is first asked for: brotli at its best quality costs ~0.5 s of CPU
for the tree, which every server and worker process paid at start-up even when it never
served the web client (API-only deployments, restarts, the test suite's servers).
One hash for the tree, rather than one per file, keeps relative ES-module imports between
files working without a build step, and any change to any file changes every URL, so the
files can be cached forever (``immutable``).
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import brotli
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

STATIC_DIR = Path(__file__).parent / "static"
STATIC_PREFIX = "/static"

MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".gif": "image/gif",
    ".ico": "image/x-icon",
    ".webp": "image/webp",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".txt": "text/plain; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
# Already-compressed formats gain nothing from another pass.
_COMPRESSIBLE = {".js", ".mjs", ".css", ".json", ".map", ".svg", ".txt", ".html", ".ico"}
_IMMUTABLE = "public, max-age=31536000, immutable"
# Files named by a fixed URL rather than the tree's hash: rendered messages carry Zulip's
# loading placeholder (lib/thumbnails.py), which every client fetches from the server at
# that path. They may change with a release, so they are cached for a day, not forever.
FIXED_PATHS = ("images/loading/loader-black.svg", "images/loading/loader-white.svg")
_DAILY = "public, max-age=86400"


class Asset:
    """One file's bytes, and its compressed forms once first asked for (``encodings``)."""

    def __init__(self, media_type: str, body: bytes, compressible: bool) -> None:
        self.media_type = media_type
        self.body = body
        self._compressible = compressible
        self._encoded: tuple[bytes | None, bytes | None] | None = None
        self._lock = threading.Lock()

    def encodings(self) -> tuple[bytes | None, bytes | None]:
        """(gzip, brotli), each None where it would not be smaller than the file."""
        if self._encoded is None:
            with self._lock:
                if self._encoded is None:
                    self._encoded = _compress(self.body) if self._compressible else (None, None)
        return self._encoded


@dataclass(frozen=True)
class StaticTree:
    hash: str
    assets: dict[str, Asset]

    def url(self, path: str) -> str:
        return f"{STATIC_PREFIX}/{self.hash}/{path.lstrip('/')}"

    def exists(self, path: str) -> bool:
        return path in self.assets


def _asset(path: Path, data: bytes) -> Asset:
    suffix = path.suffix.lower()
    media_type = MEDIA_TYPES.get(suffix, "application/octet-stream")
    return Asset(media_type, data, suffix in _COMPRESSIBLE and len(data) >= 256)


def _compress(data: bytes) -> tuple[bytes | None, bytes | None]:
    gz = gzip.compress(data, compresslevel=9, mtime=0)
    br = brotli.compress(data, quality=11)
    return (gz if len(gz) < len(data) else None, br if len(br) < len(data) else None)


def _read_tree(root: Path) -> tuple[str, dict[str, bytes]]:
    files: dict[str, bytes] = {}
    tree = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []:
        relative = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in relative.split("/")):
            continue  # editor swap files, .DS_Store
        data = path.read_bytes()
        tree.update(relative.encode() + b"\0" + hashlib.sha256(data).digest())
        files[relative] = data
    return tree.hexdigest()[:16], files


# Tests build many apps from the same files: each distinct tree is read, and each of its
# files compressed, once per process.
_cache: dict[Path, StaticTree] = {}
_cache_lock = threading.Lock()


def load_static_tree(root: Path = STATIC_DIR) -> StaticTree:
    tree_hash, files = _read_tree(root)
    with _cache_lock:
        cached = _cache.get(root)
        if cached is not None and cached.hash == tree_hash:
            return cached
        tree = StaticTree(tree_hash, {name: _asset(Path(name), data) for name, data in files.items()})
        _cache[root] = tree
        return tree


def _accepts(header: str, coding: str) -> bool:
    for item in header.split(","):
        name, _, params = item.strip().partition(";")
        if name.strip().lower() != coding:
            continue
        q = params.strip().lower()
        # "br;q=0" refuses the coding; any other weight accepts it.
        return not (q.startswith("q=") and q[2:].strip().rstrip("0").rstrip(".") in ("0", ""))
    return False


def asset_response(asset: Asset, accept_encoding: str, cache_control: str = _IMMUTABLE) -> Response:
    headers = {
        "Cache-Control": cache_control,
        "Vary": "Accept-Encoding",
        "X-Content-Type-Options": "nosniff",
    }
    body = asset.body
    gz, br = asset.encodings()
    if br is not None and _accepts(accept_encoding, "br"):
        body, headers["Content-Encoding"] = br, "br"
    elif gz is not None and _accepts(accept_encoding, "gzip"):
        body, headers["Content-Encoding"] = gz, "gzip"
    return Response(body, media_type=asset.media_type, headers=headers)


def static_routes(tree: StaticTree) -> list[Route]:
    async def serve(request: Request) -> Response:
        asset = None
        if request.path_params["tree_hash"] == tree.hash:
            # Only files read at start-up can be named, so "../" leads nowhere.
            asset = tree.assets.get(request.path_params["path"])
        if asset is None:
            return Response("Not found", status_code=404, media_type="text/plain")
        return asset_response(asset, request.headers.get("accept-encoding", ""))

    def fixed(path: str) -> Route:
        async def serve_fixed(request: Request) -> Response:
            asset = tree.assets.get(path)
            if asset is None:
                return Response("Not found", status_code=404, media_type="text/plain")
            return asset_response(asset, request.headers.get("accept-encoding", ""), _DAILY)

        return Route(f"{STATIC_PREFIX}/{path}", serve_fixed, methods=["GET"])

    # The fixed paths first: "/static/images/..." would otherwise be read as a tree hash.
    return [
        *(fixed(path) for path in FIXED_PATHS),
        Route(STATIC_PREFIX + "/{tree_hash}/{path:path}", serve, methods=["GET"]),
    ]
