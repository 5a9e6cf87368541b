"""Importing next to existing data: every ID is new, and every reference follows it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from palaver.models.auth import RecoveryCode, TwoFactorDevice
from palaver.portability.archive import ArchiveError
from palaver.portability.exporter import export_realm
from palaver.portability.importer import import_realm
from palaver.services import Services
from tests import helpers
from tests.client import TestClient
from tests.helpers import PASSWORD, Api, SeededRealm, assert_json_success
from tests.portability.populate import PNG, populate
from tests.web.web_helpers import log_in


def messages(api: Api, user: helpers.TestUser, **params: Any) -> list[dict[str, Any]]:
    query = {"anchor": "oldest", "num_before": 0, "num_after": 1000, **params}
    result: list[dict[str, Any]] = assert_json_success(api.get(user, "messages", query))["messages"]
    return result


def logged_in(client: TestClient, realm: SeededRealm, string_id: str) -> tuple[Api, SeededRealm]:
    """The imported realm's users, with the API keys the import gave them."""
    host = f"{string_id}.palaver.test"
    users = {}
    for name, old in realm.users.items():
        if old.is_bot:
            continue
        response = client.post(
            "/api/v1/fetch_api_key",
            data={"username": old.email, "password": PASSWORD},
            headers={"host": host},
        )
        body = assert_json_success(response)
        users[name] = helpers.TestUser(body["user_id"], old.email, body["api_key"], old.full_name, old.role)
    new = SeededRealm(0, string_id, host, users)
    return Api(client, new), new


def test_import_beside_the_original_maps_every_reference(
    api: Api, realm: SeededRealm, client: TestClient, services: Services, tmp_path: Path
) -> None:
    made = populate(api, realm)
    archive = tmp_path / "realm.zip"
    export_realm(services, realm.id, archive)
    copy_id = f"{realm.string_id}-copy"
    result = import_realm(services, archive, string_id=copy_id)
    assert result.realm_id != realm.id
    new_api, new = logged_in(client, realm, copy_id)
    ids = {name: new.users[name].id for name in new.users}
    assert all(ids[name] != realm.users[name].id for name in ids)
    # The copy's API keys clash with the original's, so they were replaced.
    assert new.hamlet.api_key != realm.hamlet.api_key

    old_msgs, new_msgs = messages(api, realm.hamlet), messages(new_api, new.hamlet)
    assert [m["content"] != "" for m in old_msgs] == [True] * len(new_msgs)
    assert len(old_msgs) == len(new_msgs)
    old_by_new = dict(zip([m["id"] for m in new_msgs], old_msgs, strict=True))
    # People are matched by name (unique here), which covers bots too.
    name_of = {
        u["user_id"]: u["full_name"] for u in assert_json_success(new_api.get(new.hamlet, "users"))["members"]
    }
    old_name_of = {
        u["user_id"]: u["full_name"] for u in assert_json_success(api.get(realm.hamlet, "users"))["members"]
    }
    for msg in new_msgs:
        old = old_by_new[msg["id"]]
        assert msg["id"] != old["id"]
        assert name_of[msg["sender_id"]] == old_name_of[old["sender_id"]]
        assert msg["subject"] == old["subject"] and msg["flags"] == old["flags"]
        assert sorted(name_of[r["user_id"]] for r in msg["reactions"]) == sorted(
            old_name_of[r["user_id"]] for r in old["reactions"]
        )

    groups = {
        g["name"]: g for g in assert_json_success(new_api.get(new.hamlet, "user_groups"))["user_groups"]
    }
    streams = {
        s["name"]: s["stream_id"] for s in assert_json_success(new_api.get(new.hamlet, "streams"))["streams"]
    }
    mention = next(m for m in new_msgs if m["subject"] == "kickoff" and m["sender_id"] == ids["hamlet"])
    html = mention["content"]
    assert f'data-user-id="{ids["othello"]}"' in html
    assert f'data-user-group-id="{groups["reviewers"]["id"]}"' in html
    assert f'data-stream-id="{streams["design"]}"' in html
    assert f"/user_uploads/{result.realm_id}/" in html and f"/user_uploads/{realm.id}/" not in html
    assert sorted(groups["reviewers"]["members"]) == sorted([ids["hamlet"], ids["othello"]])
    raw = messages(new_api, new.hamlet, apply_markdown="false")
    raw_mention = next(m for m in raw if m["id"] == mention["id"])["content"]
    assert f"|{ids['othello']}**" in raw_mention or "@**Othello, the Moor of Venice**" in raw_mention

    # Files moved to the new realm's paths and are served there.
    upload_path = made.upload_url.replace(f"/user_uploads/{realm.id}/", f"/user_uploads/{result.realm_id}/")
    assert new_api.get(new.hamlet, upload_path).content == b"hello notes"
    emoji = assert_json_success(new_api.get(new.hamlet, "realm/emoji"))["emoji"]
    (party,) = [e for e in emoji.values() if e["name"] == "party"]
    old_emoji = assert_json_success(api.get(realm.hamlet, "realm/emoji"))["emoji"]
    (old_party,) = [e for e in old_emoji.values() if e["name"] == "party"]
    # The stored picture (as the upload scaled it) came along byte for byte.
    original = api.get(None, old_party["source_url"]).content
    assert original.startswith(PNG[:8])
    assert new_api.get(None, party["source_url"]).content == original

    # Edit history, profile data, drafts and the DM group follow the new IDs.
    edited = next(m for m in new_msgs if m["subject"] == "plans")
    history = assert_json_success(new_api.get(new.hamlet, f"messages/{edited['id']}/history"))[
        "message_history"
    ]
    assert {h["user_id"] for h in history} == {ids["othello"]}
    me = assert_json_success(
        new_api.get(new.hamlet, f"users/{ids['hamlet']}", {"include_custom_profile_fields": "true"})
    )
    (value,) = me["user"]["profile_data"].values()
    assert json.loads(value["value"]) == [ids["othello"]]
    (draft,) = assert_json_success(new_api.get(new.hamlet, "drafts"))["drafts"]
    assert draft["to"] == [ids["othello"]]
    dm_narrow = json.dumps([{"operator": "dm", "operand": [ids["othello"], ids["cordelia"]]}])
    assert_json_success(
        new_api.post(
            new.hamlet,
            "messages",
            {"type": "direct", "to": json.dumps([ids["othello"], ids["cordelia"]]), "content": "again"},
        )
    )
    assert [
        m["content"] for m in messages(new_api, new.hamlet, narrow=dm_narrow, apply_markdown="false")
    ] == [
        "group chat",
        "again",
    ]
    # The sign-in audit log names the new IDs, the administrator who acted included.
    logins = assert_json_success(new_api.get(new.iago, "realm/logins"))["logins"]
    assert (ids["othello"], "two_factor_reset", "admin", ids["iago"]) in {
        (r["user_id"], r["method"], r["channel"], r["acting_user_id"]) for r in logins
    }
    # Addresses Palaver made up follow the realm's new host.
    bot = next(
        u
        for u in assert_json_success(new_api.get(new.iago, "users"))["members"]
        if u["full_name"] == "Notification Bot"
    )
    assert bot["email"] == f"notification-bot@{copy_id}.palaver.test"
    # The original is untouched.
    assert messages(api, realm.hamlet) == old_msgs


def test_import_refuses_an_existing_string_id(
    api: Api, realm: SeededRealm, services: Services, tmp_path: Path
) -> None:
    archive = tmp_path / "realm.zip"
    export_realm(services, realm.id, archive)
    with pytest.raises(
        ArchiveError, match=f"an organization with string ID '{realm.string_id}' exists already"
    ):
        import_realm(services, archive)


def test_import_refuses_what_is_not_an_export(services: Services, tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ArchiveError, match="is not a zip archive"):
        import_realm(services, junk)


def test_an_export_keeps_no_credentials_unless_asked(
    api: Api, realm: SeededRealm, client: TestClient, services: Services, tmp_path: Path
) -> None:
    populate(api, realm)
    with services.db.session() as session:
        session.add(
            TwoFactorDevice(user_profile_id=realm.hamlet.id, secret="JBSWY3DPEHPK3PXP", confirmed=True)
        )
        session.add(RecoveryCode(user_profile_id=realm.hamlet.id, code_hash="f" * 64))
        session.commit()
    archive = tmp_path / "realm.zip"
    export_realm(services, realm.id, archive)
    assert archive.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        content = b"".join(zf.read(n) for n in names)
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["secrets"] is False
    for table in ("web_session", "two_factor_device", "recovery_code"):
        assert f"tables/{table}.jsonl" not in names and table not in manifest["tables"], table
    assert b"JBSWY3DPEHPK3PXP" not in content
    for user in realm.users.values():
        assert user.api_key.encode() not in content
    copy_id = f"{realm.string_id}-copy"
    import_realm(services, archive, string_id=copy_id)
    # People keep their passwords and get new API keys.
    _, new = logged_in(client, realm, copy_id)
    assert all(new.users[name].api_key != realm.users[name].api_key for name in new.users)


def test_an_export_with_secrets_imports_beside_its_original(
    api: Api, realm: SeededRealm, client: TestClient, services: Services, tmp_path: Path
) -> None:
    """A same-server restore: signed-in sessions and keys clash with the original's, and the
    copy gets fresh ones instead of failing."""
    web = TestClient(client.app, base_url=f"http://{realm.host}")
    log_in(web, realm.hamlet)
    archive = tmp_path / "realm.zip"
    export_realm(services, realm.id, archive, include_secrets=True)
    assert archive.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(archive) as zf:
        assert json.loads(zf.read("manifest.json"))["tables"]["web_session"]["rows"] >= 1
        assert realm.hamlet.api_key.encode() in zf.read("tables/user_profile.jsonl")
    copy_id = f"{realm.string_id}-copy"
    result = import_realm(services, archive, string_id=copy_id)
    assert result.realm_id != realm.id
    _, new = logged_in(client, realm, copy_id)
    assert new.hamlet.api_key != realm.hamlet.api_key
    # The original's browser is still signed in.
    assert web.get("/json/users/me").status_code == 200
    web.close()
