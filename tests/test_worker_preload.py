"""A worker forked from its fork server imports nothing more of Palaver before it answers;
a server without Redis never imports redis-py.

``palaver serve --workers N`` forks its workers from a fork server that imported
``bootstrap.worker_modules()``; whatever building the app or the first request still
imports is imported again by every worker, and held by each alone. This checks it in a
fresh interpreter, as the fork server is, with Redis (which several workers always have)
and without.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection

import pytest
from starlette.testclient import TestClient

from palaver.asgi import create_app_from_environment
from palaver.bootstrap import worker_modules
from palaver.config import Settings
from palaver.services import Services
from tests.helpers import require_redis


def _answer_once(settings_json: str) -> None:
    os.environ["PALAVER_SETTINGS_JSON"] = settings_json
    app = create_app_from_environment()
    with TestClient(app) as client:
        assert client.get("/api/v1/server_settings").status_code == 200


def _imports_after_the_preload(settings_json: str, conn: Connection) -> None:
    """In the spawned child: what building the app and one answer import beyond the preload."""
    for name in worker_modules():
        importlib.import_module(name)
    before = set(sys.modules)
    _answer_once(settings_json)
    imported = set(sys.modules) - before
    conn.send(sorted(name for name in imported if name.split(".")[0] in ("palaver", "anyio")))


def _redis_modules_of_one_process(settings_json: str, conn: Connection) -> None:
    """In the spawned child: the redis-py modules a server without Redis has imported."""
    _answer_once(settings_json)
    conn.send(sorted(name for name in sys.modules if name.split(".")[0] == "redis"))


def _in_a_spawned_interpreter(target: Callable[[str, Connection], None], settings: Settings) -> object:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=target, args=(settings.model_dump_json(), child))
    process.start()
    try:
        assert parent.poll(60), "the child did not answer"
        answer: object = parent.recv()
    finally:
        process.join(30)
    assert process.exitcode == 0
    return answer


@pytest.mark.parametrize("with_redis", [False, True], ids=["in-process", "redis"])
def test_building_the_app_and_answering_imports_nothing_of_palaver_after_the_preload(
    settings: Settings, services: Services, with_redis: bool
) -> None:
    if with_redis:
        settings = settings.model_copy(update={"redis_url": require_redis()})
    assert _in_a_spawned_interpreter(_imports_after_the_preload, settings) == []


def test_a_server_without_redis_never_imports_redis_py(settings: Settings, services: Services) -> None:
    assert settings.redis_url is None
    assert _in_a_spawned_interpreter(_redis_modules_of_one_process, settings) == []
