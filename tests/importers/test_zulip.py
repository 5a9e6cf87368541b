"""``palaver import-from zulip``: a Zulip export tarball, checked through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import assert_json_success
from tests.importers.conftest import Imported, RunImport
from tests.importers.zulip_export import NOTES, export


def _messages(
    imported: Imported, viewer: str, narrow: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    data: dict[str, Any] = {"anchor": "oldest", "num_before": 0, "num_after": 100}
    if narrow is not None:
        data["narrow"] = narrow
    result = assert_json_success(imported.api().get(imported.user(viewer), "messages", data))
    messages: list[dict[str, Any]] = result["messages"]
    return messages


def test_zulip_export_imports(run_import: RunImport, tmp_path: Path) -> None:
    tarball = export(tmp_path)
    imported = run_import(f"import-from zulip {tarball} --string-id dev", None)
    assert imported.code == 0, imported
    assert "1 x message to a recipient not in zerver_recipient (e.g. messages-000001.json[8])" in imported.out
    api = imported.api()
    iago, hamlet, zoe = (imported.user(n) for n in ("Iago", "King Hamlet", "Zoë Ñandú"))

    people = {u["full_name"]: u for u in assert_json_success(api.get(iago, "users"))["members"]}
    assert {n: people[n]["role"] for n in ("Iago", "King Hamlet", "Zoë Ñandú", "Polonius")} == {
        "Iago": 100,
        "King Hamlet": 400,
        "Zoë Ñandú": 300,
        "Polonius": 600,
    }
    assert people["Old User"]["is_active"] is False
    assert people["Feed Bot"]["is_bot"] is True and people["Feed Bot"]["bot_owner_id"] == iago.id
    assert people["Notification Bot"]["is_bot"] is True
    assert people["King Hamlet"]["timezone"] == "Europe/Copenhagen"
    # Hamlet's uploaded picture came along.
    avatar = people["King Hamlet"]["avatar_url"]
    assert avatar.startswith("/user_avatars/")
    assert api.get(iago, avatar.split("?")[0]).status_code == 200

    streams = assert_json_success(
        api.get(iago, "streams", {"include_all": "true", "exclude_archived": "false"})
    )
    by_name = {s["name"]: s for s in streams["streams"]}
    assert by_name["Denmark"]["description"] == "A city in Shakespeare"
    assert by_name["Verona private"]["invite_only"] is True
    assert by_name["Verona private"]["history_public_to_subscribers"] is False
    assert by_name["Old times"]["is_archived"] is True
    assert by_name["Public square"]["is_web_public"] is True  # the organization allows spectators, as it did
    settings = assert_json_success(api.post(iago, "register", {"fetch_event_types": '["realm"]'}))
    assert settings["realm_invite_required"] is True and settings["realm_waiting_period_threshold"] == 3
    subs = {
        s["name"]: s for s in assert_json_success(api.get(hamlet, "users/me/subscriptions"))["subscriptions"]
    }
    assert set(subs) == {"Denmark"}
    assert subs["Denmark"]["color"] == "#76ce90" and subs["Denmark"]["pin_to_top"] is True
    zoe_subs = {
        s["name"]: s for s in assert_json_success(api.get(zoe, "users/me/subscriptions"))["subscriptions"]
    }
    assert zoe_subs["Verona private"]["is_muted"] is True
    # Old User left Denmark: not a subscriber any more.
    denmark_subscribers = assert_json_success(
        api.get(iago, f"streams/{by_name['Denmark']['stream_id']}/members")
    )
    assert people["Old User"]["user_id"] not in denmark_subscribers["subscribers"]

    denmark = [{"operator": "channel", "operand": "Denmark"}]
    greetings = _messages(imported, "King Hamlet", [*denmark, {"operator": "topic", "operand": "greetings"}])
    hello, notes = greetings
    assert hello["content"] == (
        f'<p>Hello <span class="user-mention" data-user-id="{hamlet.id}">@King Hamlet</span> and'
        ' <span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span>, see'
        ' <a href="https://github.com/zulip/zulip/issues/123" target="_blank"'
        ' rel="noopener noreferrer">#123</a></p>'
    )
    # The source's flags: Hamlet starred it and was mentioned; Zoë has not read it.
    assert {"read", "starred", "mentioned"} <= set(hello["flags"])
    zoe_view = _messages(imported, "Zoë Ñandú", denmark)
    assert "read" not in zoe_view[0]["flags"] and "wildcard_mentioned" in zoe_view[0]["flags"]
    assert sorted((r["emoji_name"], r["reaction_type"], r["user_id"]) for r in hello["reactions"]) == [
        ("green_tick", "realm_emoji", zoe.id),
        ("thumbs_up", "unicode_emoji", hamlet.id),
    ]
    link = notes["content"].split('href="', 1)[1].split('"', 1)[0]
    assert link.startswith("/user_uploads/1/") and link.endswith("/notes.txt")
    assert api.get(hamlet, link).content == NOTES

    edited = _messages(imported, "Iago", [*denmark, {"operator": "topic", "operand": "édition"}])[0]
    assert edited["content"] == "<p>This was edited</p>"
    assert edited["last_edit_timestamp"] == 1704194600
    history = assert_json_success(api.get(iago, f"messages/{edited['id']}/history"))["message_history"]
    assert [h["content"] for h in history] == ["This was wrong", "This was edited"]

    events = _messages(imported, "Iago", [*denmark, {"operator": "topic", "operand": "channel events"}])
    assert events[0]["sender_full_name"] == "Notification Bot"

    dm = _messages(imported, "King Hamlet", [{"operator": "dm", "operand": [iago.id]}])
    assert [m["content"] for m in dm] == [
        "<p>A direct word for"
        f' <span class="user-mention silent" data-user-id="{hamlet.id}">King Hamlet</span></p>'
    ]
    assert "read" not in dm[0]["flags"]
    group = _messages(imported, "King Hamlet", [{"operator": "dm", "operand": [iago.id, zoe.id]}])
    assert [m["content"] for m in group] == ["<p>The three of us</p>"]
    assert [r["emoji_name"] for r in group[0]["reactions"]] == ["heart"]

    private = _messages(imported, "Iago", [{"operator": "channel", "operand": "Verona private"}])
    assert [m["content"] for m in private] == ["<p>A private word</p>"]

    emoji = assert_json_success(api.get(iago, "realm/emoji"))["emoji"]
    assert [e["name"] for e in emoji.values()] == ["green_tick"]
    groups = assert_json_success(api.get(iago, "user_groups"))["user_groups"]
    backend = next(g for g in groups if g["name"] == "backend")
    assert (
        sorted(backend["members"]) == sorted([hamlet.id, zoe.id]) and backend["description"] == "Backend team"
    )
    fields = {
        f["name"]: f for f in assert_json_success(api.get(iago, "realm/profile_fields"))["custom_fields"]
    }
    assert set(fields) == {"Phone number", "Mentor"}
    hamlet_profile = assert_json_success(
        api.get(iago, f"users/{hamlet.id}", {"include_custom_profile_fields": "true"})
    )
    values = {k: v["value"] for k, v in hamlet_profile["user"]["profile_data"].items()}
    assert values == {
        str(fields["Phone number"]["id"]): "+45 555 0100",
        str(fields["Mentor"]["id"]): f"[{iago.id}]",
    }
    linkifiers = assert_json_success(api.get(iago, "realm/linkifiers"))["linkifiers"]
    assert [(x["pattern"], x["url_template"]) for x in linkifiers] == [
        ("#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}")
    ]


def test_each_persons_topic_settings_mutes_and_alert_words_come_along(
    run_import: RunImport, tmp_path: Path
) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    assert "muted, unmuted or followed topics: 3" in imported.out
    assert "muted users: 1" in imported.out and "alert words: 2" in imported.out
    assert "1 x topic setting of a user or channel not imported (e.g. 99 20)" in imported.out
    api = imported.api()
    hamlet, zoe, polonius = (imported.user(n) for n in ("King Hamlet", "Zoë Ñandú", "Polonius"))
    state = assert_json_success(
        api.post(hamlet, "register", {"fetch_event_types": '["user_topic", "muted_users", "alert_words"]'})
    )
    denmark = next(
        s["stream_id"]
        for s in assert_json_success(api.get(hamlet, "users/me/subscriptions"))["subscriptions"]
        if s["name"] == "Denmark"
    )
    topics = {(t["stream_id"], t["topic_name"], t["visibility_policy"]) for t in state["user_topics"]}
    assert topics == {(denmark, "Castle", 3), (denmark, "gossip", 1)}
    assert {t["last_updated"] for t in state["user_topics"]} == {1_704_194_600, 1_704_194_601}
    assert [m["id"] for m in state["muted_users"]] == [polonius.id]
    assert state["muted_users"][0]["timestamp"] == 1_704_195_600
    assert sorted(state["alert_words"]) == ["Ophelia", "to be or not"]
    zoes = assert_json_success(api.post(zoe, "register", {"fetch_event_types": '["user_topic"]'}))
    assert [(t["topic_name"], t["visibility_policy"]) for t in zoes["user_topics"]] == [("plans", 2)]
    assert assert_json_success(api.get(zoe, "users/me/alert_words"))["alert_words"] == []
