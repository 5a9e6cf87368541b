"""Thumbnails of uploaded images: placeholder markup, the worker, update events, serving."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.storage import make_storage
from palaver.services import Services, build_services
from palaver.workers.thumbnails import ThumbnailWorker
from tests import helpers
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success
from tests.images import animated_gif, decode, image_bytes
from tests.web.web_helpers import log_in


@pytest.fixture(scope="module")
def quiet(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, Services]]:
    """Services whose app runs no background workers: tests run the worker themselves."""
    settings = make_test_settings(database_url, tmp_path_factory.mktemp("thumbs"))
    built = build_services(settings)
    yield settings, built
    built.close()


@pytest.fixture
def qapi(quiet: tuple[Settings, Services], realm: SeededRealm) -> Api:
    settings, services = quiet
    # Not entered as a context manager: the lifespan (and its workers) never starts.
    return Api(TestClient(create_app(settings, services), base_url="http://palaver.test"), realm)


@pytest.fixture
def recorder(quiet: tuple[Settings, Services]) -> Iterator[EventRecorder]:
    recorder = EventRecorder()
    quiet[1].bus.add_listener(recorder)
    yield recorder
    quiet[1].bus.remove_listener(recorder)


def upload(api: Api, user: helpers.TestUser, name: str, data: bytes) -> str:
    body = assert_json_success(api.post(user, "user_uploads", files={"file": (name, data, "image/png")}))
    url: str = body["url"]
    return url


def send(api: Api, user: helpers.TestUser, to: list[helpers.TestUser], content: str) -> int:
    data = {"type": "direct", "to": [u.id for u in to], "content": content}
    message_id: int = assert_json_success(api.post(user, "messages", data))["id"]
    return message_id


def rendered(api: Api, user: helpers.TestUser, message_id: int) -> str:
    message: dict[str, Any] = assert_json_success(api.get(user, f"messages/{message_id}"))["message"]
    content: str = message["content"]
    return content


def test_placeholder_then_thumbnail(
    qapi: Api, quiet: tuple[Settings, Services], realm: SeededRealm, recorder: EventRecorder
) -> None:
    url = upload(qapi, realm.hamlet, "photo.png", image_bytes(2000, 1000))
    message_id = send(qapi, realm.hamlet, [realm.othello], f"look [photo.png]({url})")
    html = rendered(qapi, realm.othello, message_id)
    assert (
        f'<div class="message_inline_image"><a href="{url}" title="photo.png" rel="noopener noreferrer">'
        '<img class="image-loading-placeholder" '
        'data-original-content-type="image/png" data-original-dimensions="2000x1000" '
        'src="/static/images/loading/loader-black.svg"></a></div>'
    ) in html
    assert (
        qapi.client.get("/static/images/loading/loader-black.svg").headers["content-type"] == "image/svg+xml"
    )

    recorder.clear()
    # Other tests' images in the shared database may be pending too: at least this one.
    assert ThumbnailWorker(quiet[1]).run_pending() >= 1
    thumb = "/user_uploads/thumbnail/" + url.removeprefix("/user_uploads/") + "/840x560.webp"
    html = rendered(qapi, realm.othello, message_id)
    assert f'data-original-dimensions="2000x1000" src="{thumb}"></a></div>' in html
    assert "image-loading-placeholder" not in html
    updates = [(e, users) for e, users in recorder.of_type("update_message") if e["message_id"] == message_id]
    assert {tuple(users) for _, users in updates} <= {(realm.hamlet.id,), (realm.othello.id,)}
    assert sorted(u for _, users in updates for u in users) == sorted([realm.hamlet.id, realm.othello.id])
    event = updates[0][0]
    assert event["rendering_only"] is True and event["user_id"] is None
    assert event["message_id"] == message_id and event["message_ids"] == [message_id]
    assert event["rendered_content"] == html and event["content"] == f"look [photo.png]({url})"

    picture = qapi.get(realm.othello, thumb)
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/webp"
    assert decode(picture.content).size == (840, 420)
    assert qapi.get(None, thumb).status_code == 401
    assert qapi.get(realm.cordelia, thumb).status_code == 404  # not in the conversation
    assert (
        picture.headers["content-security-policy"]
        == "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
    )
    assert picture.headers["x-content-type-options"] == "nosniff"
    assert picture.headers["content-disposition"].startswith("inline;")
    # The web client's <img> tags: the session cookie, with the same access rules.
    for name, status in (("othello", 200), ("hamlet", 200), ("cordelia", 404)):
        # Not entered as a context manager: that would start the app's workers.
        browser = TestClient(qapi.client.app, base_url=f"http://{realm.host}")
        log_in(browser, realm.users[name])
        response = browser.get(thumb)
        browser.close()
        assert response.status_code == status, name
        if status == 200:
            assert response.content == picture.content
    assert qapi.get(realm.othello, thumb.replace("840x560.webp", "1x1.webp")).status_code == 404
    # Nothing left to do.
    assert ThumbnailWorker(quiet[1]).run_pending() == 0


def test_images_thumbnailed_before_sending_show_at_once(
    qapi: Api, quiet: tuple[Settings, Services], realm: SeededRealm
) -> None:
    url = upload(qapi, realm.hamlet, "spin.gif", animated_gif(100, 60))
    ThumbnailWorker(quiet[1]).run_pending()
    message_id = send(qapi, realm.hamlet, [realm.othello], f"[spin.gif]({url})")
    html = rendered(qapi, realm.othello, message_id)
    assert (
        'data-animated="true" data-original-content-type="image/gif" data-original-dimensions="100x60"'
        in html
    )
    assert "/840x560.webp" in html and "placeholder" not in html
    anim = qapi.get(
        realm.othello, "/user_uploads/thumbnail/" + url.removeprefix("/user_uploads/") + "/840x560-anim.webp"
    )
    assert getattr(decode(anim.content), "n_frames", 1) == 3


def test_placeholder_raced_by_the_worker_is_fixed(
    qapi: Api, quiet: tuple[Settings, Services], realm: SeededRealm
) -> None:
    # The message renders with a placeholder; the image gets done before the message's
    # attachment link exists: the message event makes the worker look again.
    url = upload(qapi, realm.hamlet, "a.png", image_bytes(50, 50))
    worker = ThumbnailWorker(quiet[1])
    message_id = send(qapi, realm.hamlet, [realm.othello], f"[a.png]({url})")
    worker._on_event(
        realm.id,
        {"type": "message", "message": {"id": message_id, "content": "image-loading-placeholder"}},
        [],
    )
    worker.run_pending()
    assert "placeholder" not in rendered(qapi, realm.othello, message_id)


def test_other_files_and_previews_off(qapi: Api, realm: SeededRealm) -> None:
    text = assert_json_success(
        qapi.post(realm.hamlet, "user_uploads", files={"file": ("notes.txt", b"hello", "text/plain")})
    )["url"]
    message_id = send(qapi, realm.hamlet, [realm.othello], f"[notes.txt]({text})")
    assert "message_inline_image" not in rendered(qapi, realm.othello, message_id)
    url = upload(qapi, realm.hamlet, "b.png", image_bytes(10, 10))
    assert_json_success(qapi.patch(realm.iago, "realm", {"inline_image_preview": False}))
    message_id = send(qapi, realm.hamlet, [realm.othello], f"[b.png]({url})")
    html = rendered(qapi, realm.othello, message_id)
    assert "message_inline_image" not in html and f'href="{url}"' in html


def test_register_lists_the_formats(qapi: Api, realm: SeededRealm) -> None:
    state = assert_json_success(qapi.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
    assert state["server_thumbnail_formats"] == [
        {
            "name": "840x560-anim.webp",
            "max_width": 840,
            "max_height": 560,
            "format": "webp",
            "animated": True,
        },
        {"name": "840x560.webp", "max_width": 840, "max_height": 560, "format": "webp", "animated": False},
    ]


def test_deleting_the_upload_deletes_its_thumbnails(
    qapi: Api, quiet: tuple[Settings, Services], realm: SeededRealm
) -> None:
    url = upload(qapi, realm.hamlet, "gone.png", image_bytes(30, 30))
    ThumbnailWorker(quiet[1]).run_pending()
    thumb = "/user_uploads/thumbnail/" + url.removeprefix("/user_uploads/") + "/840x560.webp"
    assert qapi.get(realm.hamlet, thumb).headers["content-type"] == "image/webp"
    attachments = assert_json_success(qapi.get(realm.hamlet, "attachments"))["attachments"]
    [attachment] = [a for a in attachments if a["path_id"] == url.removeprefix("/user_uploads/")]
    assert_json_success(qapi.delete(realm.hamlet, f"attachments/{attachment['id']}"))
    storage_root = quiet[0].upload_dir
    assert storage_root is not None
    assert (
        not (storage_root / "thumbnail" / url.removeprefix("/user_uploads/"))
        .joinpath("840x560.webp")
        .exists()
    )
    assert qapi.get(realm.hamlet, thumb).status_code == 404


def test_an_original_gone_before_thumbnailing_shows_as_the_original(
    qapi: Api, quiet: tuple[Settings, Services], realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    url = upload(qapi, realm.hamlet, "gone.png", image_bytes(800, 600))
    message_id = send(qapi, realm.hamlet, [realm.othello], f"[gone.png]({url})")
    path_id = url.removeprefix("/user_uploads/")
    make_storage(quiet[0]).delete(path_id)
    with caplog.at_level("WARNING", logger="palaver"):
        # Other tests' images in the shared database may be pending too: at least this one.
        assert ThumbnailWorker(quiet[1]).run_pending() >= 1
    # Logged as what it is, without a traceback; the message no longer waits for it.
    [record] = [r for r in caplog.records if path_id in r.getMessage()]
    assert "original is gone" in record.getMessage()
    assert record.levelname == "WARNING" and record.exc_info is None
    html = rendered(qapi, realm.othello, message_id)
    assert "image-loading-placeholder" not in html and f'href="{url}"' in html
    # Never retried.
    assert ThumbnailWorker(quiet[1]).run_pending() == 0
