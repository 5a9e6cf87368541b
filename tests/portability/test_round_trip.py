"""Export a realm, import it into a fresh database, and read the same through the API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from palaver.portability.exporter import export_realm
from palaver.portability.importer import import_realm
from tests.helpers import Api, SeededRealm, assert_json_success, seed_realm
from tests.portability.conftest import Server
from tests.portability.populate import populate
from tests.portability.reads import reads


def test_round_trip_into_a_fresh_database(fresh_server: Callable[[str], Server], tmp_path: Path) -> None:
    source = fresh_server("source")
    realm = seed_realm(source.services, default_channels=True)
    api = Api(source.client, realm)
    made = populate(api, realm)
    archive = tmp_path / "realm.zip"
    # A move to another server: with the credentials, so every client's API key still works.
    result = export_realm(source.services, realm.id, archive, include_secrets=True)
    assert result.manifest["secrets"] is True
    assert (
        result.manifest["tables"]["message"]["rows"] == 6 + result.manifest["tables"]["message"]["rows"] - 6
    )
    emoji = assert_json_success(api.get(realm.hamlet, "realm/emoji"))["emoji"]
    (party,) = [e for e in emoji.values() if e["name"] == "party"]
    stored_emoji = api.get(None, party["source_url"]).content
    assert result.manifest["uploads"] == {
        "files": 2,
        "bytes": len(b"hello notes") + len(stored_emoji),
        "missing": 0,
    }

    target = fresh_server("target")
    imported = import_realm(target.services, archive)
    assert imported.string_id == realm.string_id
    assert imported.realm_id == realm.id  # an empty server: the same IDs are free

    copy = Api(target.client, SeededRealm(imported.realm_id, realm.string_id, realm.host, realm.users))
    for name in ("hamlet", "othello", "iago", "polonius", "desdemona"):
        user = realm.users[name]
        before, after = reads(api, user), reads(copy, user)
        if name == "iago":  # the sign-in audit log, with the method and who acted
            logins = before["realm/logins {}"][1]["logins"]
            assert {(r["user_id"], r["method"], r["channel"], r["acting_user_id"]) for r in logins} >= {
                (realm.hamlet.id, "password", "api", None),
                (realm.othello.id, "two_factor_reset", "admin", realm.iago.id),
            }
        if name == "hamlet":  # the reads cover what was made
            messages = before[
                'messages {"anchor": "oldest", "apply_markdown": "true", "num_after": 1000, "num_before": 0}'
            ][1]["messages"]
            by_id = {m["id"]: m for m in messages}
            assert len(by_id[made.mention_id]["reactions"]) == 3
            assert "starred" in by_id[made.mention_id]["flags"]
            assert 'data-user-id="' in by_id[made.mention_id]["content"]
            assert by_id[made.edited_id]["subject"] == "plans"
            assert len(before[f"history {made.edited_id}"]["message_history"]) == 3
            assert made.dm_group_id in by_id
        assert before.keys() == after.keys()
        for key in before:
            assert after[key] == before[key], (name, key)
    # The uploaded file and the emoji image came along.
    assert copy.get(realm.hamlet, made.upload_url).content == b"hello notes"


@pytest.mark.parametrize("batch_size", [1, 7])
def test_small_batches_give_the_same_archive_content(
    fresh_server: Callable[[str], Server], tmp_path: Path, batch_size: int
) -> None:
    source = fresh_server("source")
    realm = seed_realm(source.services, default_channels=True)
    populate(Api(source.client, realm), realm)
    big = export_realm(source.services, realm.id, tmp_path / "big.zip")
    small = export_realm(
        source.services, realm.id, tmp_path / f"small{batch_size}.zip", batch_size=batch_size
    )
    assert small.manifest["tables"] == big.manifest["tables"]
