"""Link and image previews appended to messages by the preview worker (loopback server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from palaver.app import create_app
from palaver.config import Settings
from palaver.services import Services, build_services
from palaver.workers.previews import PreviewWorker
from tests import helpers
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success
from tests.images import decode
from tests.preview_server import preview_server


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with preview_server() as url:
        yield url


@pytest.fixture(scope="module")
def fetching(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Settings, Services]]:
    settings = make_test_settings(
        database_url,
        tmp_path_factory.mktemp("previews"),
        outgoing_fetches=True,
        outgoing_fetches_allow_private=True,
    )
    built = build_services(settings)
    yield settings, built
    built.close()


@pytest.fixture
def papi(fetching: tuple[Settings, Services], realm: SeededRealm) -> Api:
    # No lifespan: the test drives the worker itself.
    return Api(TestClient(create_app(*fetching), base_url="http://palaver.test"), realm)


@pytest.fixture
def recorder(fetching: tuple[Settings, Services]) -> Iterator[EventRecorder]:
    recorder = EventRecorder()
    fetching[1].bus.add_listener(recorder)
    yield recorder
    fetching[1].bus.remove_listener(recorder)


def send(api: Api, user: helpers.TestUser, to: helpers.TestUser, content: str) -> int:
    data = {"type": "direct", "to": [to.id], "content": content}
    message_id: int = assert_json_success(api.post(user, "messages", data))["id"]
    return message_id


def content(api: Api, user: helpers.TestUser, message_id: int) -> str:
    message: dict[str, Any] = assert_json_success(api.get(user, f"messages/{message_id}"))["message"]
    html: str = message["content"]
    return html


def test_open_graph_embed_and_image_preview(
    papi: Api, fetching: tuple[Settings, Services], realm: SeededRealm, base: str, recorder: EventRecorder
) -> None:
    assert_json_success(papi.patch(realm.iago, "realm", {"inline_url_embed_preview": True}))
    worker = PreviewWorker(fetching[1])
    message_id = send(papi, realm.hamlet, realm.othello, f"see {base}/page.html and {base}/pic.png")
    before = content(papi, realm.othello, message_id)
    assert "message_embed" not in before
    # The worker hears the message from the bus, then does its round.
    recorder.clear()
    event = {"type": "message", "message": {"id": message_id, "rendered_content": before}}
    worker._on_event(realm.id, event, [])
    assert worker.run_pending() == 1
    after = content(papi, realm.othello, message_id)
    assert after.startswith(before)
    added = after.removeprefix(before)
    assert f'<div class="message_embed"><a class="message_embed_image" href="{base}/page.html"' in added
    assert '<div class="message_embed_title"><a href="' in added and "The &amp; Title</a>" in added
    assert '<div class="message_embed_description">What the page is about.</div>' in added
    assert (
        f'<div class="message_inline_image"><a href="{base}/pic.png" title="{base}/pic.png">'
        f'<img src="/user_avatars/{realm.id}/previews/' in added
    )
    [src] = {part.split('"', 1)[0] for part in added.split('<img src="')[1:]}
    picture = papi.get(None, src)
    assert picture.headers["content-type"] == "image/webp"
    assert decode(picture.content).size == (840, 280)

    updates = recorder.of_type("update_message")
    assert updates and all(e["rendering_only"] and e["rendered_content"] == after for e, _ in updates)
    assert sorted(u for _, users in updates for u in users) == sorted([realm.hamlet.id, realm.othello.id])
    worker.fetcher.close()


def test_settings_turn_previews_off(
    papi: Api, fetching: tuple[Settings, Services], realm: SeededRealm, base: str
) -> None:
    worker = PreviewWorker(fetching[1])
    # The default: images previewed, pages not.
    message_id = send(
        papi, realm.hamlet, realm.othello, f"{base}/page.html {base}/plain.txt {base}/missing.png"
    )
    assert worker.preview_message(message_id) is False
    assert_json_success(papi.patch(realm.iago, "realm", {"inline_image_preview": False}))
    message_id = send(papi, realm.hamlet, realm.othello, f"{base}/pic.png")
    assert worker.preview_message(message_id) is False
    worker.fetcher.close()


def test_no_outgoing_fetches(services: Services, api: Api, realm: SeededRealm, base: str) -> None:
    # The suite's settings turn outgoing fetches off: nothing is fetched at all.
    assert services.settings.outgoing_fetches is False
    message_id = send(api, realm.hamlet, realm.othello, f"{base}/pic.png")
    worker = PreviewWorker(services)
    assert worker.preview_message(message_id) is False
    worker.fetcher.close()
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
    assert state["server_inline_url_embed_preview"] is False


def test_edits_are_previewed_afresh(
    papi: Api, fetching: tuple[Settings, Services], realm: SeededRealm, base: str, recorder: EventRecorder
) -> None:
    worker = PreviewWorker(fetching[1])
    message_id = send(papi, realm.hamlet, realm.othello, "no links yet")
    recorder.clear()
    assert_json_success(
        papi.patch(realm.hamlet, f"messages/{message_id}", {"content": f"now {base}/pic.png"})
    )
    [(edit, _)] = recorder.of_type("update_message")[:1]
    worker._on_event(realm.id, edit, [])
    assert worker.run_pending() == 1
    assert f'<div class="message_inline_image"><a href="{base}/pic.png"' in content(
        papi, realm.othello, message_id
    )
    # The rendering-only update it sent is not taken for another edit.
    rendering = [e for e, _ in recorder.of_type("update_message") if e["rendering_only"]]
    worker._on_event(realm.id, rendering[0], [])
    assert worker.run_pending() == 0
    worker.fetcher.close()
