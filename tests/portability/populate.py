"""A realm with some of everything, made through the API, for export/import tests."""

from __future__ import annotations

from dataclasses import dataclass

from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import PASSWORD, Api, SeededRealm, assert_json_success
from tests.images import image_bytes

# A real picture: custom emoji are decoded and scaled when uploaded.
PNG = image_bytes(8, 8)


@dataclass
class Populated:
    channel_id: int
    mention_id: int
    edited_id: int
    dm_group_id: int
    upload_url: str


def populate(api: Api, realm: SeededRealm) -> Populated:
    hamlet, othello, iago, cordelia = realm.hamlet, realm.othello, realm.iago, realm.cordelia
    channel_id = create_channel(
        api, iago, "design", [iago, hamlet, othello, cordelia], description="**Bold** plans"
    )
    create_channel(api, hamlet, "secret", [hamlet, othello], invite_only="true")
    group = assert_json_success(
        api.post(
            iago,
            "user_groups/create",
            {"name": "reviewers", "description": "Review", "members": [hamlet.id, othello.id]},
        )
    )
    upload = assert_json_success(
        api.post(hamlet, "user_uploads", files={"file": ("notes.txt", b"hello notes", "text/plain")})
    )
    assert_json_success(api.post(iago, "realm/emoji/party", files={"file": ("e.png", PNG, "image/png")}))

    mention_id = send_stream(
        api,
        hamlet,
        "design",
        "kickoff",
        f"Hi @**Othello, the Moor of Venice** and @*reviewers*, see [notes]({upload['url']}) :party:"
        f" and #**design>kickoff**",
    )
    edited_id = send_stream(api, othello, "design", "kickoff", "first draft")
    assert_json_success(api.patch(othello, f"messages/{edited_id}", {"content": "second draft"}))
    assert_json_success(api.patch(othello, f"messages/{edited_id}", {"topic": "plans"}))
    send_stream(api, hamlet, "secret", "hush", "quiet please")
    dm_group_id = send_dm(api, hamlet, [othello, cordelia], "group chat")
    send_dm(api, othello, [hamlet], "one to one")
    for user, emoji in ((othello, "smile"), (cordelia, "heart"), (hamlet, "party")):
        assert_json_success(api.post(user, f"messages/{mention_id}/reactions", {"emoji_name": emoji}))
    assert_json_success(
        api.post(hamlet, "messages/flags", {"messages": [mention_id], "op": "add", "flag": "starred"})
    )
    assert_json_success(
        api.post(
            othello, "messages/flags", {"messages": [mention_id, edited_id], "op": "add", "flag": "read"}
        )
    )
    assert_json_success(
        api.patch(iago, "realm", {"message_content_edit_limit_seconds": 1234, "description": "Our org"})
    )
    assert_json_success(api.patch(hamlet, "settings", {"twenty_four_hour_time": "true", "emojiset": "text"}))
    field = assert_json_success(api.post(iago, "realm/profile_fields", {"name": "Mentor", "field_type": 6}))
    assert_json_success(
        api.patch(iago, f"users/{hamlet.id}", {"profile_data": [{"id": field["id"], "value": [othello.id]}]})
    )
    assert_json_success(api.post(hamlet, "users/me/alert_words", {"alert_words": ["deploy"]}))
    assert_json_success(api.post(hamlet, "users/me/muted_users/" + str(cordelia.id)))
    assert_json_success(
        api.post(hamlet, "user_topics", {"stream_id": channel_id, "topic": "plans", "visibility_policy": 1})
    )
    assert_json_success(
        api.post(
            hamlet,
            "drafts",
            {
                "drafts": [
                    {
                        "type": "private",
                        "to": [othello.id],
                        "topic": "",
                        "content": "psst",
                        "timestamp": 1700000000,
                    }
                ]
            },
        )
    )
    # The sign-in audit log: a password login, and an administrator's reset (who did it).
    assert_json_success(api.post(None, "fetch_api_key", {"username": hamlet.email, "password": PASSWORD}))
    assert_json_success(api.delete(iago, f"users/{othello.id}/two_factor"))
    del group
    return Populated(channel_id, mention_id, edited_id, dm_group_id, upload["url"])
