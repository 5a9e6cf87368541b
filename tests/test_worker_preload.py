"""A worker forked from its fork server imports nothing more of Palaver before it answers.

``palaver serve --workers N`` forks its workers from a fork server that imported
``bootstrap.worker_modules()``; whatever building the app or the first request still
imports is imported again by every worker, and held by each alone. This checks it in a
fresh interpreter, as the fork server is.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from multiprocessing.connection import Connection

from starlette.testclient import TestClient

from palaver.asgi import create_app_from_environment
from palaver.bootstrap import worker_modules
from palaver.config import Settings
from palaver.services import Services


def _imports_after_the_preload(settings_json: str, conn: Connection) -> None:
    """In the spawned child: what building the app and one answer import beyond the preload."""
    for name in worker_modules():
        importlib.import_module(name)
    before = set(sys.modules)
    os.environ["PALAVER_SETTINGS_JSON"] = settings_json
    app = create_app_from_environment()
    with TestClient(app) as client:
        assert client.get("/api/v1/server_settings").status_code == 200
    imported = set(sys.modules) - before
    conn.send(sorted(name for name in imported if name.split(".")[0] in ("palaver", "anyio")))


def test_building_the_app_and_answering_imports_nothing_of_palaver_after_the_preload(
    settings: Settings, services: Services
) -> None:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_imports_after_the_preload, args=(settings.model_dump_json(), child))
    process.start()
    try:
        assert parent.poll(60), "the child did not answer"
        assert parent.recv() == []
    finally:
        process.join(30)
    assert process.exitcode == 0
