"""``palaver import-from mattermost``: a Mattermost bulk export, checked through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import assert_json_success
from tests.importers.conftest import Imported, RunImport
from tests.importers.mattermost_export import REPORT, export


def _messages(imported: Imported, viewer: str, narrow: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = {"anchor": "oldest", "num_before": 0, "num_after": 100, "narrow": narrow}
    result = assert_json_success(imported.api().get(imported.user(viewer), "messages", data))
    messages: list[dict[str, Any]] = result["messages"]
    return messages


def test_mattermost_export_imports(run_import: RunImport, tmp_path: Path) -> None:
    archive = export(tmp_path)
    imported = run_import(f"import-from mattermost {archive} --string-id ops --team ops", None)
    assert imported.code == 0, imported
    assert "1 x unknown line type 'widget' (e.g. import.jsonl:24)" in imported.out
    assert "1 x message from a user not among the users (e.g. import.jsonl:19)" in imported.out
    api = imported.api()
    alice, bob, carol = (imported.user(n) for n in ("Alice Ångström", "Bob Builder", "Carol Guest"))
    people = {u["full_name"]: u for u in assert_json_success(api.get(alice, "users"))["members"]}
    assert {n: people[n]["role"] for n in ("Alice Ångström", "Bob Builder", "Carol Guest")} == {
        "Alice Ångström": 100,
        "Bob Builder": 200,
        "Carol Guest": 600,
    }
    assert people["Dave Gone"]["is_active"] is False
    assert people["Build Bot"]["is_bot"] is True and people["Build Bot"]["bot_owner_id"] == alice.id

    streams = assert_json_success(
        api.get(alice, "streams", {"include_all": "true", "exclude_archived": "false"})
    )
    by_name = {s["name"]: s for s in streams["streams"]}
    assert set(by_name) == {"Town Square", "Sécret", "Old"}  # the other team's channel is not here
    assert by_name["Town Square"]["description"] == "Everyone — Welcome"
    assert by_name["Sécret"]["invite_only"] is True and by_name["Old"]["is_archived"] is True
    # Mattermost's channel admin administers the channel; elsewhere the default (the owner).
    bob = imported.user("Bob Builder")
    assert by_name["Town Square"]["can_administer_channel_group"] == {
        "direct_members": [bob.id],
        "direct_subgroups": [],
    }
    assert by_name["Sécret"]["can_administer_channel_group"] == {
        "direct_members": [alice.id],
        "direct_subgroups": [],
    }

    square = [{"operator": "channel", "operand": "Town Square"}]
    thread = _messages(
        imported, "Bob Builder", [*square, {"operator": "topic", "operand": "2024-01-02 Mattermost thread 1"}]
    )
    root, one, two = thread
    assert (
        root["content"]
        == (
            f'<p>Hello <span class="user-mention" data-user-id="{bob.id}">@Bob Builder</span> and'
            ' <span class="user-mention channel-wildcard-mention" data-user-id="*">@channel</span>, see'
            f' <a class="stream" data-stream-id="{by_name["Sécret"]["stream_id"]}" href="/#narrow/channel/'
        )
        + root["content"].split('href="/#narrow/channel/', 1)[1]
    )
    assert {"mentioned", "starred", "read"} <= set(root["flags"])
    assert sorted((r["emoji_name"], r["user_id"]) for r in root["reactions"]) == sorted(
        [("+1", bob.id), ("parrot", carol.id)]
    )
    assert one["content"] == "<p>reply <strong>one</strong></p>"
    assert two["last_edit_timestamp"] == 1704189609
    unthreaded = _messages(
        imported, "Bob Builder", [*square, {"operator": "topic", "operand": "imported from Mattermost"}]
    )
    link = unthreaded[0]["content"].split('href="', 1)[1].split('"', 1)[0]
    assert link.endswith("/report.pdf") and api.get(bob, link).content == REPORT

    dm = _messages(imported, "Bob Builder", [{"operator": "dm", "operand": [alice.id]}])
    assert [m["content"] for m in dm] == ["<p>hi bob</p>"]
    group = _messages(imported, "Bob Builder", [{"operator": "dm", "operand": [alice.id, carol.id]}])
    assert [m["content"] for m in group] == ["<p>group hi</p>"]
    secret = _messages(imported, "Alice Ångström", [{"operator": "channel", "operand": "Sécret"}])
    assert [m["content"] for m in secret] == ["<p>secret stuff</p>"]
    emoji = assert_json_success(api.get(alice, "realm/emoji"))["emoji"]
    assert [e["name"] for e in emoji.values()] == ["parrot"]


def test_a_team_must_be_chosen_when_there_are_several(run_import: RunImport, tmp_path: Path) -> None:
    result = run_import(f"import-from mattermost {export(tmp_path)} --string-id ops", None)
    assert result.code == 1 and result.realm is None
    assert (
        "the export has 2 teams (ops, other): import each with --team NAME (nothing was imported)"
        in result.err
    )
    missing = run_import(f"import-from mattermost {export(tmp_path)} --string-id ops --team nope", None)
    assert "no team 'nope' in the export (it has: ops, other)" in missing.err
