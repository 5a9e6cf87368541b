"""Small compatibility fixes found while operating Palaver."""

from __future__ import annotations

from tests.helpers import Api, SeededRealm, assert_json_success


def test_register_reports_jitsi_server_url_as_a_string(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm"]}))
    assert body["jitsi_server_url"] == "https://meet.jit.si"
    assert body["server_jitsi_server_url"] == "https://meet.jit.si"


def test_txt_upload_without_a_type_is_served_as_text_plain(api: Api, realm: SeededRealm) -> None:
    # The Python bindings send every file as application/octet-stream.
    for declared in ("application/octet-stream", None):
        file = ("notes.txt", b"hello", declared) if declared else ("notes.txt", b"hello")
        uploaded = assert_json_success(api.post(realm.hamlet, "user_uploads", files={"file": file}))
        served = api.get(realm.hamlet, uploaded["url"])
        assert served.status_code == 200
        assert served.headers["content-type"].startswith("text/plain")
        assert served.content == b"hello"
    binary = assert_json_success(
        api.post(
            realm.hamlet, "user_uploads", files={"file": ("blob.weird", b"\x00", "application/octet-stream")}
        )
    )
    assert api.get(realm.hamlet, binary["url"]).headers["content-type"] == "application/octet-stream"


def test_path_parameter_repeated_in_the_body_is_not_ignored(api: Api, realm: SeededRealm) -> None:
    sent = api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "hi"})
    message_id = assert_json_success(sent)["id"]
    # As zulip.Client.add_reaction and update_message send them.
    reacted = api.post(
        realm.hamlet, f"messages/{message_id}/reactions", {"message_id": message_id, "emoji_name": "smile"}
    )
    assert "ignored_parameters_unsupported" not in assert_json_success(reacted)
    edited = api.patch(realm.hamlet, f"messages/{message_id}", {"message_id": message_id, "content": "hey"})
    assert "ignored_parameters_unsupported" not in assert_json_success(edited)
