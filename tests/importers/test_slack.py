"""``palaver import-from slack``: a Slack export, checked through the API as its people see it."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select

from palaver.models.email_outbox import EmailOutbox
from tests.helpers import assert_json_success
from tests.importers.conftest import FileServer, Imported, RunImport
from tests.importers.slack_export import NOTES, export


def _import(run_import: RunImport, tmp_path: Path, files: FileServer, extra: str = "") -> Imported:
    root = export(tmp_path / "slack", files)
    archive = Path(shutil.make_archive(str(tmp_path / "Acme Slack export Jan 1 2024"), "zip", root))
    return run_import(
        f"import-from slack {shlex.quote(str(archive))} --string-id acme --token xoxe-test"
        f" --files-base-url {files.url} {extra}",
        None,
    )


def _messages(
    imported: Imported, viewer: str, narrow: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    data: dict[str, Any] = {"anchor": "oldest", "num_before": 0, "num_after": 100}
    if narrow is not None:
        data["narrow"] = narrow
    result = assert_json_success(imported.api().get(imported.user(viewer), "messages", data))
    messages: list[dict[str, Any]] = result["messages"]
    return messages


def test_slack_export_imports(run_import: RunImport, tmp_path: Path, file_server: FileServer) -> None:
    imported = _import(run_import, tmp_path, file_server)
    assert imported.code == 0, imported
    assert "messages: 13 (3 direct)" in imported.out
    assert "1 x unknown message subtype 'huddle_thread' (e.g. general/2024-01-02.json[7])" in imported.out
    assert "1 x message from a user not among the users (e.g. general/2024-01-02.json[8])" in imported.out
    # Integrations cannot move: the one still installed is named (Google Drive was removed).
    assert (
        "1 x Slack integration (not movable: set it up again in Palaver) (e.g. integration_logs.json GitHub)"
        in imported.out
    )
    # Files and emoji were fetched through the base URL, with the token.
    assert file_server.authorizations == ["Bearer xoxe-test", "Bearer xoxe-test"]
    api = imported.api()
    ada, zoe, bob, gus = (
        imported.user(n) for n in ("Ada Lovelace", "Zoë Ångström", "Bob Builder", "Gus Guest")
    )

    people = {u["full_name"]: u for u in assert_json_success(api.get(ada, "users"))["members"]}
    assert people["Ada Lovelace"]["role"] == 100 and people["Ada Lovelace"]["timezone"] == "Europe/London"
    assert people["Zoë Ångström"]["role"] == 200
    assert people["Bob Builder"]["role"] == 400
    assert people["Gus Guest"]["role"] == 600
    assert people["Old Timer"]["is_active"] is False
    assert people["Deploy Bot"]["is_bot"] is True and people["Slackbot"]["is_bot"] is True
    assert people["Ada Lovelace"]["delivery_email"] == "ada@example.com"
    assert (
        people["Ada Lovelace"]["is_imported_stub"] is True
        and people["Deploy Bot"]["is_imported_stub"] is False
    )

    streams = assert_json_success(
        api.get(ada, "streams", {"include_all": "true", "exclude_archived": "false"})
    )
    by_name = {s["name"]: s for s in streams["streams"]}
    assert set(by_name) == {"general", "random", "prácticas", "secret-plans"}
    assert by_name["general"]["description"] == "Everything — Company-wide"
    assert by_name["random"]["is_archived"] is True
    assert by_name["secret-plans"]["invite_only"] is True
    subscribed = {
        s["name"] for s in assert_json_success(api.get(bob, "users/me/subscriptions"))["subscriptions"]
    }
    assert subscribed == {"general"}
    # Bob sees no private channel he is not in, nor its messages.
    assert "secret-plans" not in {s["name"] for s in assert_json_success(api.get(bob, "streams"))["streams"]}

    general = [{"operator": "channel", "operand": "general"}]
    unthreaded = _messages(
        imported, "Ada Lovelace", [*general, {"operator": "topic", "operand": "imported from Slack"}]
    )
    assert [m["sender_full_name"] for m in unthreaded] == [
        "Ada Lovelace",
        "Bob Builder",
        "Deploy Bot",
        "Zoë Ångström",
    ]
    hello, notes, deployed, waves = unthreaded
    assert "<strong>everyone</strong>" in hello["content"] and "<em>the</em>" in hello["content"]
    assert "<del>old</del>" in hello["content"]
    assert 'href="https://example.com/a_b"' in hello["content"] and "&amp; more" in hello["content"]
    assert (
        '<span class="user-mention channel-wildcard-mention" data-user-id="*">@channel</span>'
        in hello["content"]
    )
    assert "mentioned" not in hello["flags"] and "stream_wildcard_mentioned" not in hello["flags"]
    assert hello["timestamp"] == 1704189601
    assert waves["content"] == "<p>/me waves</p>"
    assert deployed["content"] == "<p>Deployed v1</p>"

    thread = _messages(
        imported, "Ada Lovelace", [*general, {"operator": "topic", "operand": "2024-01-02 Slack thread 1"}]
    )
    assert thread[0]["content"] == (
        f'<p>Question for <span class="user-mention" data-user-id="{ada.id}">@Ada Lovelace</span>?</p>'
    )
    question, answer, broadcast = thread
    assert "mentioned" in question["flags"]
    reactions = sorted((r["emoji_name"], r["user_id"], r["reaction_type"]) for r in question["reactions"])
    assert [(name, user) for name, user, _ in reactions] == sorted(
        [("+1", ada.id), ("+1", bob.id), ("partyparrot", zoe.id), ("wave", gus.id)]
    )
    assert ("partyparrot", zoe.id, "realm_emoji") in reactions
    assert 'href="/#narrow/channel/' in answer["content"] and "#prácticas" in answer["content"]
    assert "<li>one</li>" in answer["content"] and "*not bold*" in answer["content"]
    assert answer["last_edit_timestamp"] == 1704189630
    assert broadcast["content"] == "<p>Also sent to the channel</p>"

    # The pinned message is starred for whoever pinned it.
    assert "starred" in _messages(imported, "Zoë Ångström", general)[0]["flags"]
    assert "starred" not in _messages(imported, "Ada Lovelace", general)[0]["flags"]

    # The shared file is linked, downloadable, and owned by its uploader.
    link = notes["content"].split('href="', 1)[1].split('"', 1)[0]
    assert link.startswith("/user_uploads/") and link.endswith("/notes.txt")
    assert api.get(bob, link).content == NOTES
    attachments = assert_json_success(api.get(bob, "attachments"))["attachments"]
    assert [a["name"] for a in attachments] == ["notes.txt"]

    dm = _messages(imported, "Bob Builder", [{"operator": "dm", "operand": [ada.id]}])
    assert [m["content"] for m in dm] == [
        f'<p>hi <span class="user-mention" data-user-id="{ada.id}">@Ada Lovelace</span></p>',
        "<p>hi Bob</p>",
    ]
    group = _messages(imported, "Bob Builder", [{"operator": "dm", "operand": [ada.id, zoe.id]}])
    assert [m["content"] for m in group] == ["<p>all three of us</p>"]
    assert {r["id"] for r in group[0]["display_recipient"]} == {ada.id, zoe.id, bob.id}

    emoji = assert_json_success(api.get(ada, "realm/emoji"))["emoji"]
    assert [e["name"] for e in emoji.values()] == ["partyparrot"]
    assert api.get(ada, next(iter(emoji.values()))["source_url"]).status_code == 200

    archived = _messages(imported, "Ada Lovelace", [{"operator": "channel", "operand": "random"}])
    assert [(m["sender_full_name"], m["content"]) for m in archived] == [
        ("Old Timer", "<p>An old message</p>")
    ]
    spanish = _messages(imported, "Zoë Ångström", [{"operator": "channel", "operand": "prácticas"}])
    assert spanish[0]["content"] == "<p>¡Hola, señor!</p>"
    # Imported history is read.
    assert all("read" in m["flags"] for m in _messages(imported, "Bob Builder"))
    bobs = _messages(imported, "Bob Builder", general)
    assert "stream_wildcard_mentioned" in bobs[0]["flags"]


def test_dry_run_writes_nothing(run_import: RunImport, tmp_path: Path, file_server: FileServer) -> None:
    imported = _import(run_import, tmp_path, file_server, "--dry-run")
    assert imported.code == 0, imported
    assert imported.realm is None
    assert "messages: 13 (3 direct)" in imported.out and "files: 1" in imported.out
    assert file_server.authorizations == []


def _zip(root: Path, tmp_path: Path) -> Path:
    return Path(shutil.make_archive(str(tmp_path / "export"), "zip", root))


def test_bad_input_is_reported_with_its_place(
    run_import: RunImport, tmp_path: Path, file_server: FileServer
) -> None:
    root = export(tmp_path / "slack", file_server)
    channels = orjson.loads((root / "channels.json").read_bytes())
    channels.append({**channels[2], "id": "C04", "name": "Prácticas"})  # the same name but for case
    channels.append({**channels[2], "id": "C05", "name": "x" * 80})
    (root / "channels.json").write_bytes(orjson.dumps(channels))
    (root / "general/2024-01-04.json").write_bytes(
        b'[{"type": "message", "user": "U01", "text": "\xff\xfe", "ts": "1"}]'
    )
    imported = run_import(f"import-from slack {_zip(root, tmp_path)} --string-id bad", None)
    assert imported.code == 0, imported
    assert "1 x duplicate channel name (renamed) (e.g. C04 'Prácticas')" in imported.out
    assert "1 x channel name too long (shortened) (e.g. C05)" in imported.out
    assert (
        "1 x unreadable day file (invalid JSON or UTF-8) (e.g. general/2024-01-04.json: invalid UTF-8 at byte"
        in imported.out
    )
    names = {
        s["name"]
        for s in assert_json_success(imported.api().get(imported.user("Ada Lovelace"), "streams"))["streams"]
    }
    assert {"Prácticas (2)", "x" * 60} <= names


def test_unusable_exports_stop_before_writing(
    run_import: RunImport, tmp_path: Path, file_server: FileServer
) -> None:
    root = export(tmp_path / "slack", file_server)
    archive = _zip(root, tmp_path)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    result = run_import(f"import-from slack {truncated} --string-id t1", None)
    assert result.code == 1 and result.realm is None
    assert f"{truncated}: truncated or corrupt zip archive" in result.err

    (root / "users.json").unlink()
    result = run_import(f"import-from slack {root} --string-id t2", None)
    assert result.code == 1 and result.realm is None
    assert "users.json is missing (not a Slack export?) (nothing was imported)" in result.err

    (root / "users.json").write_bytes(b'[{"id": "U01", ')
    result = run_import(f"import-from slack {root} --string-id t3", None)
    assert result.code == 1 and result.realm is None
    assert "users.json: invalid JSON" in result.err

    tarball = Path(shutil.make_archive(str(tmp_path / "export"), "gztar", root))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(tarball.read_bytes()[:-200])
    result = run_import(f"import-from slack {cut} --string-id t5", None)
    assert result.code == 1 and f"{cut}: truncated or corrupt tarball" in result.err

    result = run_import(f"import-from slack {tmp_path / 'nowhere'} --string-id t4", None)
    assert result.code == 1 and "does not exist" in result.err


def test_an_existing_string_id_is_refused(
    run_import: RunImport, tmp_path: Path, file_server: FileServer
) -> None:
    first = _import(run_import, tmp_path, file_server)
    root = tmp_path / "slack"
    again = run_import(
        f"import-from slack {root} --string-id acme --files-base-url {file_server.url}", first.server
    )
    assert again.code == 1
    assert "an organization with string ID 'acme' exists already (nothing was imported)" in again.err


def test_imported_people_are_emailed_to_claim_their_accounts(
    run_import: RunImport, tmp_path: Path, file_server: FileServer
) -> None:
    imported = _import(run_import, tmp_path, file_server)
    listed = run_import("send-account-emails --realm acme --dry-run", imported.server)
    assert listed.code == 0, listed
    assert listed.out.splitlines()[:2] == ["ada@example.com", "zoe@example.com"]
    assert "4 people would be emailed" in listed.out  # active humans: not Old Timer, not the bots
    sent = run_import("send-account-emails --realm acme", imported.server)
    assert sent.code == 0, sent
    with imported.server.services.db.session() as session:
        queued = session.execute(select(EmailOutbox.to_address, EmailOutbox.template)).all()
    assert sorted(queued) == sorted(
        (f"{n}@example.com", "password_reset") for n in ("ada", "zoe", "bob", "gus")
    )


def test_the_import_is_in_the_organizations_audit_log(
    run_import: RunImport, tmp_path: Path, file_server: FileServer
) -> None:
    imported = _import(run_import, tmp_path, file_server)
    assert imported.code == 0, imported
    listed = run_import("audit-log --realm acme --json", imported.server)
    assert listed.code == 0, listed
    entries = [orjson.loads(line) for line in listed.out.splitlines()]
    assert len(entries) == 1
    (entry,) = entries
    # Zulip's REALM_IMPORTED, by no person (the command line).
    assert entry["event_type"] == 229 and entry["acting_user_id"] is None
    assert entry["extra_data"]["source"] == "slack"
    assert entry["extra_data"]["summary"]["messages"] == 13
    assert entry["extra_data"]["summary"]["direct_messages"] == 3
    assert entry["extra_data"]["skipped"]["unknown message subtype 'huddle_thread'"] == 1
    text = run_import("audit-log --realm acme", imported.server)
    assert text.code == 0 and " realm_imported - " in text.out
    # A dry run and a refused import record nothing.
    assert run_import("audit-log --realm nosuch", imported.server).code == 1
