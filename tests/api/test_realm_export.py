"""The realm export API: requests made in the background, downloads, deletion, consents."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest

from palaver.services import Services
from palaver.workers.exports import ExportWorker
from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success, wait_until


def wait_until_done(api: Api, realm: SeededRealm, export_id: int) -> dict[str, Any]:
    """The server's own worker (started with the app) makes the export; wait for it."""
    found: dict[str, Any] = {}

    def made() -> bool:
        exports = assert_json_success(api.get(realm.iago, "export/realm"))["exports"]
        (mine,) = [e for e in exports if e["id"] == export_id]
        found.update(mine)
        return not mine["pending"]

    wait_until(made, timeout=60, interval=0.02)
    return found


def archive_messages(api: Api, url: str) -> list[dict[str, Any]]:
    response = api.get(None, url.split("palaver.test", 1)[1])
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as zf:
        assert json.loads(zf.read("manifest.json"))["realm"]["id"] == api.realm.id
        return [json.loads(line) for line in zf.read("tables/message.jsonl").splitlines()]


def test_public_export_in_the_background(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.iago, "open", [realm.iago, realm.hamlet])
    create_channel(api, realm.hamlet, "closed", [realm.hamlet, realm.othello], invite_only="true")
    public_id = send_stream(api, realm.hamlet, "open", "t", "for everyone")
    private_id = send_stream(api, realm.hamlet, "closed", "t", "for few")
    dm_id = send_dm(api, realm.hamlet, [realm.othello], "just us")

    export_id = assert_json_success(api.post(realm.iago, "export/realm"))["id"]
    first = events.of_type("realm_export")[0]
    assert sorted(first[1]) == sorted([realm.desdemona.id, realm.iago.id])
    assert first[0]["exports"][-1]["pending"] is True and first[0]["exports"][-1]["export_url"] is None

    done = wait_until_done(api, realm, export_id)
    assert done["failed_timestamp"] is None and done["deleted_timestamp"] is None
    assert (done["acting_user_id"], done["export_type"]) == (realm.iago.id, 1)
    assert isinstance(done["export_time"], float)
    assert done["export_url"].startswith(f"http://{realm.host}/exports/{realm.id}/exports/")
    exported = {m["id"] for m in archive_messages(api, done["export_url"])}
    assert public_id in exported
    assert private_id not in exported and dm_id not in exported
    last = events.of_type("realm_export")[-1][0]["exports"][-1]
    assert last == done


def test_standard_export_holds_what_consenting_users_received(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.othello, "settings", {"allow_private_data_export": "true"}))
    to_consenting = send_dm(api, realm.hamlet, [realm.othello], "othello agreed")
    between_others = send_dm(api, realm.hamlet, [realm.cordelia], "cordelia did not")
    export_id = assert_json_success(api.post(realm.desdemona, "export/realm", {"export_type": 2}))["id"]
    done = wait_until_done(api, realm, export_id)
    exported = {m["id"] for m in archive_messages(api, done["export_url"])}
    assert to_consenting in exported and between_others not in exported


def test_export_permissions_and_errors(api: Api, realm: SeededRealm) -> None:
    for method, path in (("post", "export/realm"), ("get", "export/realm"), ("get", "export/realm/consents")):
        response = getattr(api, method)(realm.hamlet, path)
        assert_json_error(response, "Must be an organization administrator")
    assert_json_error(api.post(realm.iago, "export/realm", {"export_type": 3}), "Invalid export type")
    assert_json_error(api.delete(realm.iago, "export/realm/999999"), "Invalid data export ID")


def test_delete_export(api: Api, realm: SeededRealm, services: Services) -> None:
    export_id = assert_json_success(api.post(realm.iago, "export/realm"))["id"]
    done = wait_until_done(api, realm, export_id)
    path = done["export_url"].split("palaver.test", 1)[1]
    assert api.get(None, path).status_code == 200
    assert_json_success(api.delete(realm.iago, f"export/realm/{export_id}"))
    (after,) = [
        e for e in assert_json_success(api.get(realm.iago, "export/realm"))["exports"] if e["id"] == export_id
    ]
    assert after["export_url"] is None and isinstance(after["deleted_timestamp"], float)
    assert api.get(None, path).status_code == 404
    assert_json_error(api.delete(realm.iago, f"export/realm/{export_id}"), "Export already deleted")
    assert_json_error(
        api.delete(realm.hamlet, f"export/realm/{export_id}"), "Must be an organization administrator"
    )


def test_delete_pending_export_and_claims(api: Api, realm: SeededRealm, services: Services) -> None:
    from datetime import timedelta

    from palaver.actions.realm_export import STALE_CLAIM, do_claim_realm_export
    from palaver.models.realm_export import RealmExportRecord
    from palaver.timeutil import utcnow

    now = utcnow()
    with services.db.session() as session:
        # Claimed from the start, as by a worker busy making it (so the server's own
        # worker leaves it alone).
        record = RealmExportRecord(realm_id=realm.id, acting_user_id=realm.iago.id, date_started=now)
        session.add(record)
        session.commit()
        export_id = record.id
        assert not do_claim_realm_export(session, export_id, now + timedelta(minutes=5))
    assert_json_error(api.delete(realm.iago, f"export/realm/{export_id}"), "Export still in progress")
    assert export_id not in ExportWorker(services).run_pending()
    with services.db.session() as session:
        # A claim older than STALE_CLAIM belongs to a process that died: it is taken over.
        assert do_claim_realm_export(session, export_id, now + STALE_CLAIM + timedelta(minutes=1))
        session.get(RealmExportRecord, export_id).pending = False  # type: ignore[union-attr]
        session.commit()


def test_export_consents(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    consents = assert_json_success(api.get(realm.iago, "export/realm/consents"))["export_consents"]
    humans = [u for u in realm.users.values() if not u.is_bot]
    assert consents == [{"user_id": u.id, "consented": False} for u in sorted(humans, key=lambda u: u.id)]
    events.clear()
    assert_json_success(api.patch(realm.hamlet, "settings", {"allow_private_data_export": "true"}))
    (event, users) = events.of_type("realm_export_consent")[0]
    assert event == {"type": "realm_export_consent", "user_id": realm.hamlet.id, "consented": True}
    assert sorted(users) == sorted([realm.desdemona.id, realm.iago.id])
    consents = assert_json_success(api.get(realm.iago, "export/realm/consents"))["export_consents"]
    assert {"user_id": realm.hamlet.id, "consented": True} in consents


@pytest.mark.parametrize("path", ["/exports/1/exports/x/y.zip", "/exports/../../etc/passwd"])
def test_export_files_need_their_key(api: Api, path: str) -> None:
    assert api.get(None, path).status_code == 404
