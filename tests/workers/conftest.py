"""Service-bot tests: an app that may call loopback services, and a worker with a clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from palaver.app import create_app
from palaver.services import Services
from palaver.workers.outgoing_webhooks import ServiceBotWorker
from tests.client import TestClient
from tests.helpers import Api, Clock, SeededRealm, TestUser, assert_json_success
from tests.workers.service_server import ServiceServer, service_server


@pytest.fixture
def loopback_services(services: Services) -> Services:
    """The session's services with loopback service URLs allowed and a 1 s timeout."""
    settings = services.settings.model_copy(
        update={"outgoing_webhooks_allow_private": True, "outgoing_webhook_timeout_seconds": 1.0}
    )
    return dataclasses.replace(services, settings=settings)


@pytest.fixture
def hooks_api(loopback_services: Services, realm: SeededRealm) -> Api:
    # No lifespan (no `with`): the app must not close the session's shared services.
    app = create_app(loopback_services.settings, loopback_services)
    return Api(TestClient(app, base_url="http://palaver.test"), realm)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def worker(loopback_services: Services, clock: Clock) -> Iterator[ServiceBotWorker]:
    built = ServiceBotWorker(loopback_services, clock=clock)
    yield built
    built.http.close()


@pytest.fixture
def server() -> Iterator[ServiceServer]:
    with service_server() as running:
        yield running


def create_service_bot(api: Api, owner: TestUser, short_name: str, full_name: str, **data: Any) -> TestUser:
    body = assert_json_success(
        api.post(owner, "bots", {"full_name": full_name, "short_name": short_name, **data})
    )
    return TestUser(
        body["user_id"], f"{short_name}-bot@{api.realm.host}", body["api_key"], full_name, 400, True
    )
