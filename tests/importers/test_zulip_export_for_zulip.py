"""``palaver export --format zulip`` writes what Zulip's ``manage.py import``
(zerver/lib/import_realm.py) reads: that importer reads many keys by name, so a row without
one stops the import with a KeyError, and it drops what an export does not list. Each test
names the fact of Zulip's importer it stands for; none needs Zulip itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select

from palaver.actions.email_gateway import get_or_create_email_gateway_bot
from palaver.actions.notification_bot import get_or_create_notification_bot
from palaver.lib.realm import realm_email_host
from palaver.models import Realm, UserProfile
from palaver.models.bots import BotDefaults, BotService
from palaver.models.channels import Stream
from tests.helpers import assert_json_success
from tests.images import decode, image_bytes
from tests.importers.conftest import Imported, RunImport
from tests.importers.test_zulip_round_trip import read_tarball
from tests.importers.zulip_export import export

MIGRATION_STATUS = {
    "migrations_by_app": {"zerver": ["[X] 0001_initial"], "analytics": ["[X] 0001_initial"]},
    "zulip_version": "11.0",
}


def _imported(run_import: RunImport, tmp_path: Path) -> Imported:
    imported = run_import(f"import-from zulip {export(tmp_path / 'in')} --string-id trip", None)
    assert imported.code == 0, imported
    return imported


def _export(run_import: RunImport, imported: Imported, tmp_path: Path, options: str = "") -> dict[str, Any]:
    back = tmp_path / "back.tar.gz"
    exported = run_import(f"export trip {back} --format zulip --force {options}", imported.server)
    assert exported.code == 0, exported
    files = read_tarball(back)
    return {"files": files, "out": exported.out, **orjson.loads(files["realm.json"])}


def test_the_target_servers_migration_status_goes_into_the_tarball(
    run_import: RunImport, tmp_path: Path
) -> None:
    # do_import_realm refuses a directory without migration_status.json, and compares its
    # migrations with the server's own: only the target server can write it.
    imported = _imported(run_import, tmp_path)
    status = tmp_path / "migration_status.json"
    status.write_bytes(orjson.dumps(MIGRATION_STATUS))
    written = _export(run_import, imported, tmp_path, f"--zulip-migration-status {status}")
    assert written["files"]["migration_status.json"] == status.read_bytes()
    assert "no migration_status.json" not in written["out"]

    without = _export(run_import, imported, tmp_path)
    assert "migration_status.json" not in without["files"]
    assert "no migration_status.json" in without["out"]
    assert "export_migration_status" in without["out"]

    status.write_bytes(b'{"zulip_version": "11.0"}')
    refused = run_import(
        f"export trip {tmp_path / 'x.tar.gz'} --format zulip --zulip-migration-status {status}",
        imported.server,
    )
    assert refused.code != 0
    assert not (tmp_path / "x.tar.gz").exists()


def test_rows_hold_every_key_zulips_import_reads_by_name(run_import: RunImport, tmp_path: Path) -> None:
    imported = _imported(run_import, tmp_path)
    with imported.server.services.db.session() as session:
        bot = session.scalars(select(UserProfile).where(UserProfile.email.like("feed-bot@%"))).one()
        denmark = session.scalars(select(Stream).where(Stream.name == "Denmark")).one()
        session.add(
            BotDefaults(
                bot_profile_id=bot.id,
                default_sending_stream_id=denmark.id,
                default_events_register_stream_id=denmark.id,
                default_all_public_streams=True,
            )
        )
        realm = session.get(Realm, bot.realm_id)
        assert realm is not None
        realm.signup_announcements_stream_id = denmark.id
        session.commit()
    written = _export(run_import, imported, tmp_path)
    realm_row = written["zerver_realm"][0]
    streams = {s["name"]: s["id"] for s in written["zerver_stream"]}

    # The realm's channel links are re-mapped (re_map_foreign_keys) whether set or not.
    assert realm_row["signup_announcements_stream"] == streams["Denmark"]
    for key in (
        "new_stream_announcements_stream",
        "zulip_update_announcements_stream",
        "moderation_request_channel",
    ):
        assert key in realm_row
    # Every Realm.REALM_PERMISSION_GROUP_SETTINGS key, billing too: Zulip's default for it.
    groups = {g["name"]: g for g in written["zerver_namedusergroup"]}
    assert realm_row["can_manage_billing_group"] == groups["role:administrators"]["usergroup_ptr"]

    # UserProfile: re-mapped channel and message links, Django's permission lists (deleted
    # by key) and every DATE_FIELDS column.
    for user in written["zerver_userprofile"]:
        for key in ("last_reminder", "last_active_message_id", "user_permissions", "groups"):
            assert key in user, (user["email"], key)
        for key in ("default_sending_stream", "default_events_register_stream"):
            assert key in user
    bot_row = next(u for u in written["zerver_userprofile"] if u["email"].startswith("feed-bot@"))
    assert bot_row["default_sending_stream"] == streams["Denmark"]
    assert bot_row["default_events_register_stream"] == streams["Denmark"]
    assert bot_row["default_all_public_streams"] is True

    # NamedUserGroup rows are keyed by "id" as well as by their pointer.
    assert all(g["id"] == g["usergroup_ptr"] for g in written["zerver_namedusergroup"])

    # The avatar file's new name is made from the user's ID and the record's version.
    versions = {u["id"]: u["avatar_version"] for u in written["zerver_userprofile"]}
    avatars = orjson.loads(written["files"]["avatars/records.json"])
    assert avatars
    assert all(r["avatar_version"] == versions[r["user_profile_id"]] for r in avatars)


def test_each_earlier_content_comes_with_its_html(run_import: RunImport, tmp_path: Path) -> None:
    # fix_message_edit_history renders only an entry whose prev_rendered_content is None,
    # and that path needs keys an edit-history entry has not (the import stops there).
    written = _export(run_import, _imported(run_import, tmp_path), tmp_path)
    entries = [
        entry
        for name, data in written["files"].items()
        if name.startswith("messages-")
        for message in orjson.loads(data)["zerver_message"]
        if message["edit_history"]
        for entry in orjson.loads(message["edit_history"])
        if "prev_content" in entry
    ]
    assert entries
    assert all(entry["prev_rendered_content"] for entry in entries)
    assert any(entry["prev_rendered_content"] == "<p>This was wrong</p>" for entry in entries)


def test_zulips_system_bots_are_the_new_servers(run_import: RunImport, tmp_path: Path) -> None:
    # The importer maps zerver_userprofile_crossrealm to its own system bots by address; a
    # realm user with a system bot's address makes Zulip's get_system_bot (a lookup by
    # address alone) find two, and the import stops on its last step.
    written = _export(run_import, _imported(run_import, tmp_path), tmp_path)
    emails = {u["email"] for u in written["zerver_userprofile"]}
    assert "notification-bot@zulip.com" not in emails
    (bot,) = written["zerver_userprofile_crossrealm"]
    assert bot["email"] == "notification-bot@zulip.com"
    # Its personal recipient is the new server's: named here, not defined.
    assert bot["recipient_id"] not in {r["id"] for r in written["zerver_recipient"]}
    assert all(s["user_profile"] != bot["id"] for s in written["zerver_subscription"])
    assert all(m["user_profile"] != bot["id"] for m in written["zerver_usergroupmembership"])
    messages = orjson.loads(written["files"]["messages-000001.json"])
    assert any(m["sender"] == bot["id"] for m in messages["zerver_message"])
    assert all(um["user_profile"] != bot["id"] for um in messages["zerver_usermessage"])
    assert written["out"].startswith(f"Exported 'trip' in Zulip's format: {len(emails)} users")


def test_pending_messages_name_the_files_they_link(run_import: RunImport, tmp_path: Path) -> None:
    # The importer rewrites upload links (the path holds the realm's new ID) only in the
    # scheduled messages each zerver_attachment row lists.
    written = _export(run_import, _imported(run_import, tmp_path), tmp_path)
    attachments = orjson.loads(written["files"]["attachment.json"])["zerver_attachment"]
    for a in attachments:
        linking = [
            m["id"]
            for m in written["zerver_scheduledmessage"]
            if f"/user_uploads/{a['path_id']}" in m["content"]
        ]
        assert a["scheduled_messages"] == linking, a["file_name"]
    assert any(a["scheduled_messages"] for a in attachments)


def test_the_sign_in_methods_allowed_are_listed(run_import: RunImport, tmp_path: Path) -> None:
    # Zulip enables only the methods zerver_realmauthenticationmethod lists: none listed,
    # nobody can sign in to the imported organization.
    imported = _imported(run_import, tmp_path)
    written = _export(run_import, imported, tmp_path)
    names = [m["name"] for m in written["zerver_realmauthenticationmethod"]]
    assert "Email" in names and "GitHub" in names
    with imported.server.services.db.session() as session:
        realm = session.scalars(select(Realm).where(Realm.string_id == "trip")).one()
        realm.disabled_authentication_methods = "GitHub,SAML"
        session.commit()
    written = _export(run_import, imported, tmp_path)
    names = [m["name"] for m in written["zerver_realmauthenticationmethod"]]
    assert "Email" in names and "GitHub" not in names and "SAML" not in names


def test_edit_history_visibility_is_zulips_policy(run_import: RunImport, tmp_path: Path) -> None:
    # Zulip's Realm lost allow_edit_history in 11.0 (migration 0678); Realm(**row) refuses
    # a key its model lacks. message_edit_history_visibility_policy took its place.
    imported = _imported(run_import, tmp_path)
    assert (
        _export(run_import, imported, tmp_path)["zerver_realm"][0]["message_edit_history_visibility_policy"]
        == 1
    )
    with imported.server.services.db.session() as session:
        realm = session.scalars(select(Realm).where(Realm.string_id == "trip")).one()
        realm.allow_edit_history = False
        session.commit()
    back = tmp_path / "back.tar.gz"
    written = _export(run_import, imported, tmp_path)
    row = written["zerver_realm"][0]
    assert "allow_edit_history" not in row
    assert row["message_edit_history_visibility_policy"] == 3
    # And Palaver reads the policy from such an export.
    again = run_import(f"import-from zulip {back} --string-id again", None)
    assert again.code == 0, again
    with again.server.services.db.session() as session:
        realm = session.scalars(select(Realm).where(Realm.string_id == "again")).one()
        assert realm.allow_edit_history is False


def test_outgoing_webhook_bots_keep_their_endpoint(run_import: RunImport, tmp_path: Path) -> None:
    # Zulip's import reads zerver_service (and gives each a new token); without it an
    # outgoing-webhook bot arrives delivering nowhere.
    imported = _imported(run_import, tmp_path)
    with imported.server.services.db.session() as session:
        bot = session.scalars(select(UserProfile).where(UserProfile.email.like("feed-bot@%"))).one()
        # The fixture's bot came with its endpoint; it is given another one here.
        service = session.scalars(select(BotService).where(BotService.bot_profile_id == bot.id)).one()
        service.base_url = "https://hooks.example.com/feed"
        service.token, service.interface = "secret-token", 2
        session.commit()
        bot_id = bot.id
    written = _export(run_import, imported, tmp_path)
    (service,) = written["zerver_service"]
    assert service["user_profile"] == bot_id
    assert (service["name"], service["base_url"], service["interface"]) == (
        "feed",
        "https://hooks.example.com/feed",
        2,
    )
    assert "secret-token" not in written["files"]["realm.json"].decode()


def test_the_organizations_own_system_bots_are_zulips(run_import: RunImport, tmp_path: Path) -> None:
    # Palaver keeps a Notification Bot (and an Email Gateway bot) in each organization where
    # Zulip has one system bot for all: the export names Zulip's, by its address.
    imported = _imported(run_import, tmp_path)
    settings = imported.server.services.settings
    with imported.server.services.db.session() as session:
        realm = session.scalars(select(Realm).where(Realm.string_id == "trip")).one()
        host = realm_email_host(settings, realm)
        notices = get_or_create_notification_bot(session, realm, host)
        gateway = get_or_create_email_gateway_bot(session, realm, host)
        session.commit()
        ids = {"notices": notices.id, "gateway": gateway.id}
    written = _export(run_import, imported, tmp_path)
    crossrealm = {u["id"]: u["email"] for u in written["zerver_userprofile_crossrealm"]}
    assert crossrealm[ids["notices"]] == "notification-bot@zulip.com"
    assert crossrealm[ids["gateway"]] == "emailgateway@zulip.com"
    assert not {u["id"] for u in written["zerver_userprofile"]} & set(crossrealm)

    # A bot someone owns is theirs, whatever its address.
    with imported.server.services.db.session() as session:
        bot = session.get(UserProfile, ids["gateway"])
        assert bot is not None
        bot.bot_owner_id = session.scalars(
            select(UserProfile.id).where(UserProfile.email == "iago@zulip.test")
        ).one()
        session.commit()
    written = _export(run_import, imported, tmp_path)
    assert ids["gateway"] in {u["id"] for u in written["zerver_userprofile"]}


def test_the_organizations_pictures_come_along(run_import: RunImport, tmp_path: Path) -> None:
    # Zulip's import copies realm_icons/ to <realm>/realm/<name> and serves it when the
    # realm row's source is "U" (at its version).
    imported = _imported(run_import, tmp_path)
    api, iago = imported.api(), imported.user("Iago")
    assert_json_success(
        api.post(iago, "realm/icon", files={"f": ("i.png", image_bytes(120, 120), "image/png")})
    )
    assert_json_success(
        api.post(
            iago, "realm/logo", {"night": "true"}, files={"f": ("l.png", image_bytes(400, 100), "image/png")}
        )
    )
    written = _export(run_import, imported, tmp_path)
    row = written["zerver_realm"][0]
    assert (row["icon_source"], row["logo_source"], row["night_logo_source"]) == ("U", "D", "U")
    assert row["icon_version"] == 2 and row["night_logo_version"] == 2
    records = orjson.loads(written["files"]["realm_icons/records.json"])
    realm_id = row["id"]
    names = [
        f"{realm_id}/realm/{n}"
        for n in ("icon.original", "icon.png", "night_logo.original", "night_logo.png")
    ]
    assert sorted(r["path"] for r in records) == names
    for name in names:
        assert decode(written["files"][f"realm_icons/{name}"]).size[1] in (100, 120)


def test_zulip_makes_the_subscription_history(run_import: RunImport, tmp_path: Path) -> None:
    # Only when realm.json has no zerver_realmauditlog does Zulip's import write the
    # subscription_created entries its soft deactivation reads (create_subscription_events).
    written = _export(run_import, _imported(run_import, tmp_path), tmp_path)
    assert "zerver_realmauditlog" not in written
