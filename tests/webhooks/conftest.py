"""Shared by the webhook tests: an incoming-webhook bot, a channel, and posting fixtures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.api.test_messages_send import create_channel, fetch_one
from tests.helpers import Api, SeededRealm, TestUser, assert_json_success

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@dataclass
class Hook:
    api: Api
    realm: SeededRealm
    bot: TestUser

    def post(
        self,
        integration: str,
        body: bytes | str,
        *,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
        api_key: str | None = None,
        **params: str,
    ) -> httpx.Response:
        query = {"api_key": api_key if api_key is not None else self.bot.api_key, **params}
        all_headers = {"host": self.realm.host, "content-type": content_type, **(headers or {})}
        response: httpx.Response = self.api.client.post(
            f"/api/v1/external/{integration}?{urlencode(query)}",
            content=body.encode() if isinstance(body, str) else body,
            headers=all_headers,
        )
        return response

    def message(self, response: httpx.Response) -> dict[str, Any]:
        """The one message a successful delivery posted, as the channel's subscriber sees it."""
        [message_id] = assert_json_success(response)["message_ids"]
        return fetch_one(self.api, self.realm.hamlet, message_id)


@pytest.fixture
def hook(api: Api, realm: SeededRealm) -> Hook:
    body = assert_json_success(
        api.post(realm.hamlet, "bots", {"full_name": "CI Hooks", "short_name": "ci", "bot_type": 2})
    )
    bot = TestUser(body["user_id"], f"ci-bot@{realm.host}", body["api_key"], "CI Hooks", 400, True)
    create_channel(api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
    return Hook(api, realm, bot)
