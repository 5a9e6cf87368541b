"""GET /attachments, DELETE /attachments/{id}, and attachment events."""

from __future__ import annotations

from palaver.services import Services
from tests.api.test_messages_send import create_channel, send_stream
from tests.api.test_uploads import get_file, upload
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def test_list_attachments(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = upload(api, realm.hamlet, "a.txt", b"abc")
    upload(api, realm.hamlet, "b.txt", b"defgh")
    upload(api, realm.othello, "c.txt", b"12")
    create_channel(api, realm.hamlet, "files")
    events.clear()
    message_id = send_stream(api, realm.hamlet, "files", "t", f"[a]({first['url']})")
    [(event, users)] = events.of_type("attachment", "update")
    assert users == [realm.hamlet.id]
    assert event["attachment"]["message_ids"] == [message_id]

    body = assert_json_success(api.get(realm.hamlet, "attachments"))
    assert body["upload_space_used"] == 10
    names = [(a["name"], a["size"], a["message_ids"]) for a in body["attachments"]]
    assert names == [("a.txt", 3, [message_id]), ("b.txt", 5, [])]
    item = body["attachments"][0]
    assert set(item) == {"id", "name", "path_id", "size", "create_time", "message_ids"}
    assert first["url"].endswith(item["path_id"])
    assert item["create_time"] < 10**11  # seconds, not milliseconds


def test_delete_attachment(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    url = upload(api, realm.hamlet, "a.txt", b"abc")["url"]
    [attachment] = assert_json_success(api.get(realm.hamlet, "attachments"))["attachments"]
    assert_json_error(api.delete(realm.othello, f"attachments/{attachment['id']}"), "Invalid attachment")
    events.clear()
    assert_json_success(api.delete(realm.hamlet, f"attachments/{attachment['id']}"))
    [(event, users)] = events.of_type("attachment", "remove")
    assert (event["attachment"], event["upload_space_used"], users) == (
        {"id": attachment["id"]},
        0,
        [realm.hamlet.id],
    )
    assert get_file(api, realm.hamlet, url).status_code == 404
    assert services.settings.upload_dir is not None
    assert not (services.settings.upload_dir / attachment["path_id"]).exists()
    assert_json_error(api.delete(realm.hamlet, f"attachments/{attachment['id']}"), "Invalid attachment")
    assert_json_error(api.delete(realm.hamlet, f"attachments/{2**40}"), "Invalid attachment")


def test_edit_detaches_uploads(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    from tests.api.edit_helpers import edit_ok

    mine = upload(api, realm.hamlet, "mine.txt", b"1")
    shared = upload(api, realm.hamlet, "shared.txt", b"22")
    theirs = upload(api, realm.othello, "theirs.txt", b"333")
    create_channel(api, realm.hamlet, "files", [realm.hamlet, realm.othello])
    send_stream(api, realm.othello, "files", "t", f"[theirs]({theirs['url']})")
    send_stream(api, realm.hamlet, "files", "t", f"[shared]({shared['url']})")
    message_id = send_stream(
        api,
        realm.hamlet,
        "files",
        "t",
        f"[mine]({mine['url']}) [shared]({shared['url']}) [theirs]({theirs['url']})",
    )
    events.clear()
    body = edit_ok(api, realm.hamlet, message_id, content="nothing linked now")
    # Only the editor's file that no other message links is detached.
    [detached] = body["detached_uploads"]
    assert set(detached) == {"id", "name", "path_id", "size", "create_time", "message_ids"}
    assert (detached["name"], detached["size"], detached["message_ids"]) == ("mine.txt", 1, [])
    assert mine["url"].endswith(detached["path_id"])
    updated = {e["attachment"]["name"]: users for e, users in events.of_type("attachment", "update")}
    assert updated == {
        "mine.txt": [realm.hamlet.id],
        "shared.txt": [realm.hamlet.id],
        "theirs.txt": [realm.othello.id],
    }
    # Linking it again claims it again.
    body = edit_ok(api, realm.hamlet, message_id, content=f"[back]({mine['url']})")
    assert body["detached_uploads"] == []
    [item] = [
        a
        for a in assert_json_success(api.get(realm.hamlet, "attachments"))["attachments"]
        if a["name"] == "mine.txt"
    ]
    assert item["message_ids"] == [message_id]
    assert get_file(api, realm.othello, mine["url"]).status_code == 200
