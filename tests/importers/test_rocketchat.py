"""``palaver import-from rocketchat``: a mongodump of Rocket.Chat's database, checked through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import assert_json_success
from tests.importers.conftest import Imported, RunImport
from tests.importers.rocketchat_export import NOTES, export


def _messages(imported: Imported, viewer: str, narrow: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = {"anchor": "oldest", "num_before": 0, "num_after": 100, "narrow": narrow}
    result = assert_json_success(imported.api().get(imported.user(viewer), "messages", data))
    messages: list[dict[str, Any]] = result["messages"]
    return messages


def test_rocketchat_dump_imports(run_import: RunImport, tmp_path: Path) -> None:
    imported = run_import(
        f"import-from rocketchat {export(tmp_path)} --string-id rocket --name Rocketeers", None
    )
    assert imported.code == 0, imported
    assert (
        "1 x unreadable BSON (the rest of the collection) (e.g. rocketchat/rocketchat_message.bson[10]"
        in imported.out
    )
    assert "1 x Rocket.Chat system message (uj)" in imported.out
    api = imported.api()
    ana, ben, cleo = (imported.user(n) for n in ("Ana Ångel", "Ben Builder", "Cleo Guest"))
    realm = assert_json_success(api.get(ana, "server_settings"))
    assert realm["realm_name"] == "Rocketeers"
    people = {u["full_name"]: u for u in assert_json_success(api.get(ana, "users"))["members"]}
    assert people["Ana Ångel"]["role"] == 100  # the first administrator owns the organization
    assert people["Cleo Guest"]["role"] == 600 and people["Ben Builder"]["role"] == 400
    assert people["Dov Departed"]["is_active"] is False and people["Rocket Cat"]["is_bot"] is True

    streams = assert_json_success(
        api.get(ana, "streams", {"include_all": "true", "exclude_archived": "false"})
    )
    by_name = {s["name"]: s for s in streams["streams"]}
    assert set(by_name) == {"general", "Core Téam", "old"}
    assert by_name["Core Téam"]["invite_only"] is True and by_name["old"]["is_archived"] is True
    assert by_name["general"]["description"] == "Everything"

    general = [{"operator": "channel", "operand": "general"}]
    thread = _messages(
        imported,
        "Ben Builder",
        [*general, {"operator": "topic", "operand": "2024-01-02 Rocket.Chat thread 1"}],
    )
    root, reply, edited = thread
    assert f'data-user-id="{ben.id}">@Ben Builder</span>' in root["content"]
    assert 'data-user-id="*">@all</span>' in root["content"]
    assert f'data-stream-id="{by_name["Core Téam"]["stream_id"]}"' in root["content"]
    assert {"mentioned", "starred"} <= set(root["flags"])  # Ben pinned it
    assert sorted((r["emoji_name"], r["user_id"]) for r in root["reactions"]) == sorted(
        [("+1", ben.id), ("+1", cleo.id), ("parrot", ana.id)]
    )
    assert reply["content"] == "<p>A reply in the thread</p>"
    assert edited["last_edit_timestamp"] == 1704189690
    notes = _messages(
        imported, "Ben Builder", [*general, {"operator": "topic", "operand": "imported from Rocket.Chat"}]
    )
    link = notes[0]["content"].split('href="', 1)[1].split('"', 1)[0]
    assert link.endswith("/notes.txt") and api.get(ben, link).content == NOTES

    dm = _messages(imported, "Ben Builder", [{"operator": "dm", "operand": [ana.id]}])
    assert [m["content"] for m in dm] == ["<p>hello ben</p>"]
    group = _messages(imported, "Ben Builder", [{"operator": "dm", "operand": [ana.id, cleo.id]}])
    assert [m["content"] for m in group] == ["<p>hello both</p>"]
    assert [e["name"] for e in assert_json_success(api.get(ana, "realm/emoji"))["emoji"].values()] == [
        "parrot"
    ]
