"""Zulip's format there and back: a Zulip export imported into Palaver and exported again
with ``palaver export --format zulip`` holds the same organization, field by field.

IDs change on the way (and with them the upload paths and mention suffixes), so both
tarballs are read into one normal form keyed by what people see: emails, channel names,
each message's sender and time."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path
from typing import Any

import orjson

from tests.importers.conftest import RunImport
from tests.importers.zulip_export import export

_MENTION_ID = re.compile(r"(@_?\*\*[^*|\n]+)\|\d+(\*\*)")
_UPLOAD = re.compile(r"/user_uploads/[^)\s]*/([^/)\s]+)")


def read_tarball(path: Path) -> dict[str, Any]:
    files: dict[str, bytes] = {}
    with tarfile.open(path) as tf:
        for member in tf.getmembers():
            if member.isfile():
                extracted = tf.extractfile(member)
                assert extracted is not None
                files[member.name.split("/", 1)[1]] = extracted.read()
    return files


def normal_form(path: Path) -> dict[str, Any]:
    files = read_tarball(path)
    realm = orjson.loads(files["realm.json"])
    users = {u["id"]: u for u in realm["zerver_userprofile"]}
    emails = {i: u["delivery_email"] for i, u in users.items()}
    emails |= {u["id"]: u["email"] for u in realm["zerver_userprofile_crossrealm"]}
    streams = {s["id"]: s for s in realm["zerver_stream"]}
    stream_of_recipient = {s["recipient"]: s["name"] for s in streams.values()}
    recipients = {r["id"]: r for r in realm["zerver_recipient"]}
    members: dict[int, set[str]] = {}
    for sub in realm["zerver_subscription"]:
        members.setdefault(sub["recipient"], set()).add(emails[sub["user_profile"]])

    def where(message: dict[str, Any]) -> tuple[Any, ...] | None:
        recipient = recipients.get(message["recipient"])
        if recipient is None:
            return None
        if recipient["type"] == 2:
            return ("channel", stream_of_recipient[recipient["id"]])
        if recipient["type"] == 1:
            return ("dm", tuple(sorted({emails[recipient["type_id"]], emails[message["sender"]]})))
        return ("dm", tuple(sorted(members[recipient["id"]])))

    messages, flags, keys = {}, {}, {}
    for name in sorted(n for n in files if n.startswith("messages-")):
        table = orjson.loads(files[name])
        for m in table["zerver_message"]:
            place = where(m)
            if place is None:
                continue
            key = (emails[m["sender"]], m["date_sent"])
            keys[m["id"]] = key
            history = orjson.loads(m["edit_history"]) if m["edit_history"] else []
            messages[key] = {
                "where": place,
                "topic": m["subject"],
                "content": _UPLOAD.sub(r"/user_uploads/\1", _MENTION_ID.sub(r"\1\2", m["content"])),
                "last_edit_time": m["last_edit_time"],
                "has_attachment": m["has_attachment"],
                "edits": [
                    (emails.get(h.get("user_id")), h["timestamp"], h.get("prev_content")) for h in history
                ],
            }
        for um in table["zerver_usermessage"]:
            if um["message"] in keys:
                flags[(keys[um["message"]], emails[um["user_profile"]])] = um["flags_mask"] & 0x1FF
    groups = {g.get("usergroup_ptr", g.get("id")): g for g in realm["zerver_namedusergroup"]}
    group_members: dict[str, list[str]] = {}
    for m in realm["zerver_usergroupmembership"]:
        group = groups.get(m["user_group"])  # unnamed groups hold permission settings
        if group is not None and not group["is_system_group"]:
            group_members.setdefault(group["name"], []).append(emails[m["user_profile"]])
    fields = {f["id"]: f for f in realm["zerver_customprofilefield"]}
    attachment_rows = orjson.loads(files["attachment.json"])["zerver_attachment"]
    emoji_records = orjson.loads(files["emoji/records.json"])
    avatar_records = orjson.loads(files["avatars/records.json"])

    def field_value(f: dict[str, Any], value: str) -> Any:
        return sorted(emails[u] for u in orjson.loads(value)) if f["field_type"] == 6 else value

    return {
        "realm": {
            k: realm["zerver_realm"][0][k]
            for k in (
                "name",
                "description",
                "invite_required",
                "enable_spectator_access",
                "waiting_period_threshold",
                "default_language",
                "message_content_edit_limit_seconds",
            )
        },
        "users": {
            u["delivery_email"]: {
                "full_name": u["full_name"],
                "role": u["role"],
                "is_bot": u["is_bot"],
                "is_active": u["is_active"],
                "timezone": u["timezone"],
                "bot_owner": emails.get(u["bot_owner"]),
                "date_joined": u["date_joined"],
            }
            for u in users.values()
        },
        "channels": {
            s["name"]: {
                k: s[k]
                for k in (
                    "description",
                    "invite_only",
                    "history_public_to_subscribers",
                    "deactivated",
                    "is_web_public",
                )
            }
            for s in streams.values()
        },
        "subscriptions": {
            (emails[sub["user_profile"]], stream_of_recipient[sub["recipient"]]): (
                sub["color"],
                sub["is_muted"],
                sub["pin_to_top"],
            )
            for sub in realm["zerver_subscription"]
            if sub["recipient"] in stream_of_recipient and sub["active"]
        },
        "messages": messages,
        "flags": flags,
        "reactions": sorted(
            (
                keys[r["message"]],
                emails[r["user_profile"]],
                r["emoji_name"],
                r["reaction_type"],
                r["emoji_code"] if r["reaction_type"] == "unicode_emoji" else "",
            )
            for r in realm["zerver_reaction"]
            if r["message"] in keys
        ),
        "attachments": {
            a["file_name"]: (
                a["size"],
                emails[a["owner"]],
                sorted(keys[m] for m in a["messages"] if m in keys),
                files[f"uploads/{a['path_id']}"],
            )
            for a in attachment_rows
        },
        "emoji": {e["name"]: (e["deactivated"], emails.get(e["author"])) for e in emoji_records},
        "emoji_files_present": all(f"emoji/{e['path']}" in files for e in emoji_records),
        "avatars": sorted({emails[a["user_profile_id"]] for a in avatar_records}),
        "groups": {
            g["name"]: (g["description"], sorted(group_members.get(g["name"], [])))
            for g in groups.values()
            if not g["is_system_group"]
        },
        "profile_fields": {f["name"]: (f["field_type"], f["hint"]) for f in fields.values()},
        "profile_values": {
            (fields[v["field"]]["name"], emails[v["user_profile"]]): field_value(
                fields[v["field"]], v["value"]
            )
            for v in realm["zerver_customprofilefieldvalue"]
        },
        "linkifiers": sorted((r["pattern"], r["url_template"]) for r in realm["zerver_realmfilter"]),
        "user_topics": sorted(
            (
                emails[t["user_profile"]],
                streams[t["stream"]]["name"],
                t["topic_name"],
                t["visibility_policy"],
                t["last_updated"],
            )
            for t in realm["zerver_usertopic"]
            if t["user_profile"] in emails
        ),
        "muted_users": sorted(
            (emails[m["user_profile"]], emails[m["muted_user"]], m["date_muted"])
            for m in realm["zerver_muteduser"]
        ),
        "alert_words": sorted((emails[w["user_profile"]], w["word"]) for w in realm["zerver_alertword"]),
    }


def test_zulip_round_trip_keeps_every_field(run_import: RunImport, tmp_path: Path) -> None:
    source = export(tmp_path / "in")
    imported = run_import(f"import-from zulip {source} --string-id trip", None)
    assert imported.code == 0, imported
    back = tmp_path / "back.tar.gz"
    exported = run_import(f"export trip {back} --format zulip", imported.server)
    assert exported.code == 0, exported
    assert "Exported 'trip' in Zulip's format" in exported.out
    assert back.stat().st_mode & 0o777 == 0o600

    before, after = normal_form(source), normal_form(back)
    # What the import does not carry, and says so: the message to a recipient the export
    # does not define, and the old server's system bot, which comes as an ordinary bot.
    before["messages"] = {k: v for k, v in before["messages"].items() if v["topic"] != "void"}
    notification_bot = after["users"].pop("notification-bot@zulip.com")
    assert notification_bot["is_bot"] is True
    for key in before:
        assert after[key] == before[key], key
