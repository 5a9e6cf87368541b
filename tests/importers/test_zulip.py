"""``palaver import-from zulip``: a Zulip export tarball, checked through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select

from palaver.importers.bundle import Bundle
from palaver.importers.model import ImportedGroupSetting
from palaver.importers.zulip import read_zulip
from palaver.models.bots import BotService
from tests.helpers import assert_json_success
from tests.importers.conftest import Imported, RunImport
from tests.importers.zulip_export import MINUTES, NOTES, SCHEDULED_AT, export


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
    # An outgoing-webhook bot keeps its endpoint, with a new secret.
    assert people["Feed Bot"]["bot_type"] == 3
    assert "bot endpoints: 1" in imported.out
    with imported.server.services.db.session() as session:
        service = session.scalars(select(BotService)).one()
        assert (service.name, service.base_url) == ("feed", "https://feeds.example.net/zulip")
        assert service.token and service.token != "old-secret"
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
    assert [h["rendered_content"] for h in history] == ["<p>This was wrong</p>", "<p>This was edited</p>"]
    assert 'highlight_text_deleted">wrong' in history[1]["content_html_diff"]

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
    engineering = next(g for g in groups if g["name"] == "engineering")
    assert engineering["members"] == [iago.id] and engineering["direct_subgroup_ids"] == [backend["id"]]
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


def test_messages_scheduled_and_not_yet_sent_come_along(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    # Three pending and a reminder; the one sent is in the history already.
    assert "scheduled messages: 3" in imported.out and "reminders: 1" in imported.out
    assert "reminder" not in imported.out.split("skipped", 1)[-1]
    api = imported.api()
    iago, hamlet, zoe = (imported.user(n) for n in ("Iago", "King Hamlet", "Zoë Ñandú"))

    def pending(user: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = assert_json_success(api.get(user, "scheduled_messages"))[
            "scheduled_messages"
        ]
        return items

    (meeting,) = pending(iago)
    denmark = next(
        s["stream_id"]
        for s in assert_json_success(api.get(iago, "users/me/subscriptions"))["subscriptions"]
        if s["name"] == "Denmark"
    )
    assert (meeting["type"], meeting["to"], meeting["topic"]) == ("stream", denmark, "plans")
    assert meeting["scheduled_delivery_timestamp"] == int(SCHEDULED_AT) and meeting["failed"] is False
    # The mention names the new user, as a message's does.
    assert meeting["content"] == "Meeting at noon, @**King Hamlet**"
    assert f'data-user-id="{hamlet.id}"' in meeting["rendered_content"]

    (minutes,) = pending(hamlet)
    assert (minutes["type"], minutes["to"]) == ("private", [iago.id])
    link = minutes["content"].split("(", 1)[1].rstrip(")")
    assert link.startswith("/user_uploads/1/") and link.endswith("/minutes.txt")
    assert api.get(hamlet, link).content == MINUTES

    # The reminder is about the message's new ID, and its links and quote name it.
    (reminder,) = assert_json_success(api.get(hamlet, "reminders"))["reminders"]
    history = assert_json_success(
        api.get(hamlet, "messages", {"anchor": "oldest", "num_before": 0, "num_after": 100})
    )["messages"]
    greeting = next(m for m in history if m["content"].startswith("<p>Hello"))
    assert reminder["reminder_target_message_id"] == greeting["id"]
    assert reminder["scheduled_delivery_timestamp"] == int(SCHEDULED_AT)
    assert f"/near/{greeting['id']}" in reminder["content"]
    assert "Note:\n> Reply to Iago" in reminder["content"]
    assert "Hello @**King Hamlet** and @**all**" in reminder["content"]

    (failed,) = pending(zoe)
    assert (failed["type"], sorted(failed["to"]), failed["failed"]) == (
        "private",
        sorted([iago.id, hamlet.id]),
        True,
    )


def test_statuses_snippets_domains_playgrounds_and_default_channels_come_along(
    run_import: RunImport, tmp_path: Path
) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    for line in (
        "statuses: 2",
        "saved snippets: 1",
        "default channels: 1",
        "email domains: 1",
        "code playgrounds: 1",
    ):
        assert line in imported.out
    # The deactivated user's status stays behind; the malformed domain is refused, counted.
    assert "1 x status of a user not imported, or with an unknown emoji (e.g. 9)" in imported.out
    assert "1 x email domain refused" in imported.out
    api = imported.api()
    iago, hamlet, zoe = (imported.user(n) for n in ("Iago", "King Hamlet", "Zoë Ñandú"))

    state = assert_json_success(
        api.post(
            iago,
            "register",
            {"fetch_event_types": '["default_streams", "realm_domains", "realm_playgrounds"]'},
        )
    )
    names = {
        s["stream_id"]: s["name"]
        for s in assert_json_success(api.get(iago, "streams", {"include_all": "true"}))["streams"]
    }
    assert [names[s] for s in state["realm_default_streams"]] == ["Denmark"]
    assert [(d["domain"], d["allow_subdomains"]) for d in state["realm_domains"]] == [("zulip.test", True)]
    assert [(p["name"], p["pygments_language"], p["url_template"]) for p in state["realm_playgrounds"]] == [
        ("Python playground", "Python", "https://python.example/?code={code}")
    ]

    emoji_id = next(iter(assert_json_success(api.get(iago, "realm/emoji"))["emoji"]))
    status = assert_json_success(api.get(iago, f"users/{hamlet.id}/status"))["status"]
    assert status == {
        "status_text": "In a meeting",
        "emoji_name": "green_tick",
        "emoji_code": emoji_id,
        "reaction_type": "realm_emoji",
    }
    status = assert_json_success(api.get(iago, f"users/{zoe.id}/status"))["status"]
    assert (status["status_text"], status["emoji_name"], status["emoji_code"]) == (
        "En vacances",
        "palm_tree",
        "1f334",
    )

    snippets = assert_json_success(api.get(hamlet, "saved_snippets"))["saved_snippets"]
    assert [(s["title"], s["content"]) for s in snippets] == [("Greeting", "Good morning, **everyone**!")]

    denmark = next(
        s
        for s in assert_json_success(api.get(hamlet, "users/me/subscriptions"))["subscriptions"]
        if s["name"] == "Denmark"
    )
    assert (
        denmark["desktop_notifications"],
        denmark["push_notifications"],
        denmark["wildcard_mentions_notify"],
    ) == (
        False,
        True,
        False,
    )
    assert denmark["audible_notifications"] is None and denmark["email_notifications"] is None


def test_each_persons_own_settings_come_along(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    api = imported.api()

    def settings(name: str) -> dict[str, Any]:
        state = assert_json_success(
            api.post(imported.user(name), "register", {"fetch_event_types": '["user_settings"]'})
        )
        found: dict[str, Any] = state["user_settings"]
        return found

    hamlet, zoe = settings("King Hamlet"), settings("Zoë Ñandú")
    assert (hamlet["twenty_four_hour_time"], hamlet["enter_sends"], hamlet["color_scheme"]) == (True, True, 2)
    assert hamlet["default_language"] == "fr"
    # A value Palaver does not offer keeps the default, as do the settings the export lacks.
    assert hamlet["emojiset"] == zoe["emojiset"] == "google"
    assert (zoe["twenty_four_hour_time"], zoe["enter_sends"], zoe["default_language"]) == (False, False, "de")


def test_channel_folders_come_along(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    assert "channel folders: 2" in imported.out
    api = imported.api()
    iago = imported.user("Iago")
    folders = assert_json_success(api.get(iago, "channel_folders", {"include_archived": "true"}))[
        "channel_folders"
    ]
    # In Zulip's order (the archived one first), descriptions rendered again here.
    assert [(f["name"], f["is_archived"]) for f in folders] == [("Gone", True), ("Places", False)]
    places = folders[1]
    assert places["description"] == "Cities and **towns**"
    assert "<strong>towns</strong>" in places["rendered_description"]
    channels = assert_json_success(api.get(iago, "streams"))["streams"]
    assert {s["name"]: s["folder_id"] for s in channels}["Denmark"] == places["id"]
    assert all(s["folder_id"] is None for s in channels if s["name"] != "Denmark")


def test_permission_settings_naming_groups_come_along(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    # Every setting but billing (Palaver has none) and the one naming a group not exported:
    # 23 of the organization's, 11 of each channel's less that one, 6 of each group's.
    assert "permission settings: 78" in imported.out
    assert "1 x organization permission setting Palaver does not have (e.g. can_manage_billing_group)" in (
        imported.out
    )
    assert (
        "1 x permission setting naming a user group or user the export does not define"
        " (Palaver's default applies) (e.g. zerver_stream Old times: can_resolve_topics_group=999)"
    ) in imported.out
    assert "permission setting refused" not in imported.out
    api = imported.api()
    iago, hamlet, zoe = (imported.user(n) for n in ("Iago", "King Hamlet", "Zoë Ñandú"))
    groups = {g["name"]: g for g in assert_json_success(api.get(iago, "user_groups"))["user_groups"]}
    backend, engineering = groups["backend"]["id"], groups["engineering"]["id"]

    realm = assert_json_success(api.post(iago, "register", {"fetch_event_types": '["realm"]'}))
    assert realm["realm_can_add_custom_emoji_group"] == engineering
    assert realm["realm_can_create_private_channel_group"] == groups["role:moderators"]["id"]
    assert realm["realm_can_create_write_only_bots_group"] == groups["role:fullmembers"]["id"]
    assert realm["realm_direct_message_permission_group"] == groups["role:members"]["id"]
    # Anonymous groups: the setting's own members and subgroups.
    assert realm["realm_can_invite_users_group"] == {
        "direct_members": [hamlet.id],
        "direct_subgroups": [backend],
    }
    assert realm["realm_can_mention_many_users_group"] == {
        "direct_members": [iago.id],
        "direct_subgroups": [],
    }

    streams = {
        s["name"]: s
        for s in assert_json_success(
            api.get(iago, "streams", {"include_all": "true", "exclude_archived": "false"})
        )["streams"]
    }
    denmark, verona, old = streams["Denmark"], streams["Verona private"], streams["Old times"]
    assert denmark["can_administer_channel_group"] == engineering
    assert denmark["can_move_messages_within_channel_group"] == {
        "direct_members": sorted([hamlet.id, zoe.id]),
        "direct_subgroups": [],
    }
    assert verona["can_send_message_group"] == {
        "direct_members": [zoe.id],
        "direct_subgroups": [groups["role:owners"]["id"]],
    }
    assert verona["can_delete_own_message_group"] == groups["role:nobody"]["id"]
    assert old["can_administer_channel_group"] == {"direct_members": [iago.id], "direct_subgroups": []}
    # The group the export does not define: Palaver's default for a new channel.
    assert old["can_resolve_topics_group"] == groups["role:nobody"]["id"]
    assert denmark["can_remove_subscribers_group"] == groups["role:administrators"]["id"]

    assert groups["engineering"]["can_mention_group"] == backend
    assert groups["engineering"]["can_join_group"] == groups["role:everyone"]["id"]
    assert groups["engineering"]["can_manage_group"] == {
        "direct_members": sorted([hamlet.id, zoe.id]),
        "direct_subgroups": [],
    }
    assert groups["backend"]["can_manage_group"] == {"direct_members": [iago.id], "direct_subgroups": []}
    # Zoë may send to Verona private: the setting's anonymous group holds her.
    sent = api.post(
        zoe, "messages", {"type": "stream", "to": "Verona private", "topic": "t", "content": "hi"}
    )
    assert_json_success(sent)


def _with_realm_changes(root: Path, change: Any) -> Path:
    """The fixture's export directory, its realm.json changed by ``change(tables)``."""
    export(root)
    directory = root / "zulip-export-abc123"
    tables = orjson.loads((directory / "realm.json").read_bytes())
    change(tables)
    (directory / "realm.json").write_bytes(orjson.dumps(tables))
    return directory


def test_settings_naming_what_the_export_lacks_are_counted_with_their_place(tmp_path: Path) -> None:
    def change(tables: dict[str, Any]) -> None:
        realm, denmark = tables["zerver_realm"][0], tables["zerver_stream"][0]
        # The API's form of an anonymous group, as some converters write it.
        realm["can_invite_users_group"] = {"direct_members": [6], "direct_subgroups": [51]}
        realm["can_create_bots_group"] = {"direct_members": [6], "direct_subgroups": [998]}
        realm["can_create_groups"] = "role:members"
        # An anonymous group whose subgroup is itself anonymous: Zulip never nests those.
        tables["zerver_groupgroupmembership"].append({"id": 99, "supergroup": 81, "subgroup": 83})
        denmark["can_subscribe_group_id"] = 13  # the column's name, as some exports give it
        del denmark["can_subscribe_group"]

    with Bundle(_with_realm_changes(tmp_path, change)) as bundle:
        source = read_zulip(bundle)
    reason = (
        "permission setting naming a user group or user the export does not define"
        " (Palaver's default applies)"
    )
    # Three of the organization's, Old times' group 999, and the four settings naming 81
    # (administering the three other channels, managing backend).
    assert source.report.skipped[reason] == 3 + 1 + 4
    skipped = source.report.examples[reason]
    assert skipped == [
        "zerver_stream Verona private: can_administer_channel_group=81",
        "zerver_stream Old times: can_administer_channel_group=81",
        "zerver_stream Old times: can_resolve_topics_group=999",
    ]
    for name in ("can_create_bots_group", "can_create_groups", "can_mention_many_users_group"):
        assert name not in source.realm_group_settings
    assert source.realm_group_settings["can_invite_users_group"] == ImportedGroupSetting(
        members=["6"], subgroups=["backend"]
    )
    channels = {c.name: c for c in source.channels}
    assert channels["Denmark"].group_settings["can_subscribe_group"] == ImportedGroupSetting(
        group="role:members"
    )
    assert "can_administer_channel_group" not in channels["Verona private"].group_settings


def test_settings_naming_users_not_imported_keep_the_default(run_import: RunImport, tmp_path: Path) -> None:
    def change(tables: dict[str, Any]) -> None:
        tables["zerver_realm"][0]["can_invite_users_group"] = {
            "direct_members": [6, 404],
            "direct_subgroups": [],
        }
        # Deactivated Old User holds no permission: left out of the setting's group.
        tables["zerver_stream"][0]["can_send_message_group"] = {
            "direct_members": [9, 7],
            "direct_subgroups": [],
        }

    imported = run_import(f"import-from zulip {_with_realm_changes(tmp_path, change)} --string-id dev", None)
    assert imported.code == 0, imported
    assert (
        "1 x organization permission setting naming a user or group not imported (Palaver's default applies)"
        " (e.g. can_invite_users_group)"
    ) in imported.out
    api = imported.api()
    iago, zoe = imported.user("Iago"), imported.user("Zoë Ñandú")
    groups = {g["name"]: g["id"] for g in assert_json_success(api.get(iago, "user_groups"))["user_groups"]}
    realm = assert_json_success(api.post(iago, "register", {"fetch_event_types": '["realm"]'}))
    assert realm["realm_can_invite_users_group"] == groups["role:members"]  # Palaver's default
    denmark = next(
        s for s in assert_json_success(api.get(iago, "streams"))["streams"] if s["name"] == "Denmark"
    )
    assert denmark["can_send_message_group"] == {"direct_members": [zoe.id], "direct_subgroups": []}


def test_navigation_views_come_along(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    assert "navigation views: 6" in imported.out
    assert "1 x navigation view of a user not imported (e.g. 99 'inbox')" in imported.out
    assert (
        "1 x navigation view of a channel, person or message not imported"
        " (e.g. 6 'narrow/channel/77-Nowhere')" in imported.out
    )
    assert (
        "1 x navigation view refused (Custom views must have a valid name.) (e.g. 7 'narrow/is/dm')"
        in imported.out
    )
    api = imported.api()

    def views(name: str) -> list[tuple[str, bool, str | None]]:
        found = assert_json_success(api.get(imported.user(name), "navigation_views"))["navigation_views"]
        return sorted((v["fragment"], v["is_pinned"], v["name"]) for v in found)

    # The fragments name the channel and message by the IDs the import gave them.
    hamlet = imported.user("King Hamlet")
    denmark = next(
        s["stream_id"]
        for s in assert_json_success(api.get(hamlet, "streams"))["streams"]
        if s["name"] == "Denmark"
    )
    narrow = [{"operator": "channel", "operand": denmark}, {"operator": "topic", "operand": "greetings"}]
    first = assert_json_success(
        api.get(
            hamlet,
            "messages",
            {"anchor": "oldest", "num_before": 0, "num_after": 1, "narrow": orjson.dumps(narrow).decode()},
        )
    )["messages"][0]["id"]
    assert views("King Hamlet") == [
        ("inbox", True, None),
        (f"narrow/channel/{denmark}-Denmark/topic/Castle", True, "Castle talk"),
        ("recent", False, None),
    ]
    assert views("Zoë Ñandú") == [
        (f"narrow/channel/{denmark}-Denmark/topic/greetings/near/{first}", False, "Where it began"),
        ("narrow/is/starred", True, None),
    ]
    assert views("Iago") == []


def test_narrow_links_in_messages_name_the_new_channel_and_message(
    run_import: RunImport, tmp_path: Path
) -> None:
    imported = run_import(f"import-from zulip {export(tmp_path)} --string-id dev", None)
    assert imported.code == 0, imported
    api, iago = imported.api(), imported.user("Iago")
    streams = assert_json_success(api.get(iago, "streams", {"exclude_archived": "false"}))["streams"]
    ids = {s["name"]: s["stream_id"] for s in streams}
    narrow = orjson.dumps([{"operator": "channel", "operand": ids["Old times"]}]).decode()
    found = assert_json_success(
        api.get(iago, "messages", {"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": narrow})
    )["messages"]
    old_days = next(m for m in found if "old days" in m["content"])
    assert f'href="#narrow/channel/{ids["Denmark"]}-Denmark/topic/Castle"' in old_days["content"]
    denmark = orjson.dumps([{"operator": "channel", "operand": ids["Denmark"]}]).decode()
    greeting = next(
        m["id"]
        for m in assert_json_success(
            api.get(
                iago, "messages", {"anchor": "oldest", "num_before": 0, "num_after": 10, "narrow": denmark}
            )
        )["messages"]
        if m["content"].startswith("<p>Hello")
    )
    near = f"#narrow/channel/{ids['Denmark']}-Denmark/topic/greetings/near/{greeting}"
    assert f'href="{near}"' in old_days["content"]
