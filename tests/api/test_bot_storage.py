"""Bot storage: PUT/GET/DELETE /bot_storage."""

from __future__ import annotations

import pytest

from palaver.lib import bot_storage
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def test_put_get_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    bot = realm.default_bot
    assert assert_json_success(api.get(bot, "bot_storage"))["storage"] == {}
    assert_json_success(api.put(bot, "bot_storage", {"storage": {"a": "1", "b": "two", "ü": ""}}))
    assert_json_success(api.put(bot, "bot_storage", {"storage": {"a": "one"}}))
    assert assert_json_success(api.get(bot, "bot_storage"))["storage"] == {"a": "one", "b": "two", "ü": ""}
    assert assert_json_success(api.get(bot, "bot_storage", {"keys": ["b", "a"]}))["storage"] == {
        "b": "two",
        "a": "one",
    }
    assert_json_error(api.get(bot, "bot_storage", {"keys": ["a", "zzz"]}), "Key does not exist.")
    assert_json_error(api.delete(bot, "bot_storage", {"keys": ["a", "zzz"]}), "Key does not exist.")
    assert_json_success(api.delete(bot, "bot_storage", {"keys": ["a"]}))
    assert assert_json_success(api.get(bot, "bot_storage"))["storage"] == {"b": "two", "ü": ""}
    assert_json_success(api.delete(bot, "bot_storage"))
    assert assert_json_success(api.get(bot, "bot_storage"))["storage"] == {}
    assert events.published == []


def test_storage_is_per_bot(api: Api, realm: SeededRealm) -> None:
    other = assert_json_success(api.post(realm.hamlet, "bots", {"full_name": "Other", "short_name": "other"}))
    from tests.helpers import TestUser

    other_bot = TestUser(other["user_id"], f"other-bot@{realm.host}", other["api_key"], "Other", 400, True)
    assert_json_success(api.put(realm.default_bot, "bot_storage", {"storage": {"k": "v"}}))
    assert assert_json_success(api.get(other_bot, "bot_storage"))["storage"] == {}


def test_only_bots(api: Api, realm: SeededRealm) -> None:
    msg = "This endpoint is only available to bots."
    assert_json_error(api.put(realm.hamlet, "bot_storage", {"storage": {"a": "b"}}), msg)
    assert_json_error(api.get(realm.hamlet, "bot_storage"), msg)
    assert_json_error(api.delete(realm.iago, "bot_storage"), msg)


def test_invalid_input(api: Api, realm: SeededRealm) -> None:
    bot = realm.default_bot
    assert_json_error(api.put(bot, "bot_storage", {}), "Missing 'storage' argument")
    assert_json_error(api.put(bot, "bot_storage", {"storage": {"a": 1}}), 'storage["a"] is not a string')
    assert_json_error(api.put(bot, "bot_storage", {"storage": ["a"]}), "storage is not a dict")
    assert_json_error(
        api.put(bot, "bot_storage", {"storage": {"k" * 201: "v"}}), "Key is too long (limit: 200 characters)"
    )
    assert_json_error(api.get(bot, "bot_storage", {"keys": "a"}), 'Argument "keys" is not valid JSON.')


def test_size_limit(api: Api, realm: SeededRealm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bot_storage, "STORAGE_SIZE_LIMIT", 10)
    import palaver.actions.bot_storage as actions

    monkeypatch.setattr(actions, "STORAGE_SIZE_LIMIT", 10)
    bot = realm.default_bot
    assert_json_success(api.put(bot, "bot_storage", {"storage": {"ab": "cdefgh"}}))
    # Replacing a value counts only the difference.
    assert_json_success(api.put(bot, "bot_storage", {"storage": {"ab": "cdefghij"}}))
    assert_json_error(
        api.put(bot, "bot_storage", {"storage": {"x": "y"}}),
        "Request exceeds storage limit by 2 characters. The limit is 10 characters.",
    )
    assert assert_json_success(api.get(bot, "bot_storage"))["storage"] == {"ab": "cdefghij"}
