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
# A narrow's channel or message operand: IDs differ between the two exports, names do not.
_NARROW_CHANNEL = re.compile(r"(narrow/channel/)(\d+)")
_NARROW_PLACE = re.compile(r"(/near/)(\d+)")
_NOTIFICATION_SETTINGS = (
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)


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
    folder_names = {f["id"]: f["name"] for f in realm.get("zerver_channelfolder", [])}
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

    messages: dict[tuple[str, int], dict[str, Any]] = {}
    flags: dict[tuple[tuple[str, int], str], int] = {}
    keys: dict[int, tuple[str, int]] = {}

    def by_names(text: str) -> str:
        """``text`` with its narrows' channel and message IDs as the channel's name and the
        message's sender and time (a link to what the export lacks keeps its ID)."""
        text = _NARROW_CHANNEL.sub(
            lambda m: m[1] + str(streams[int(m[2])]["name"] if int(m[2]) in streams else m[2]), text
        )
        return _NARROW_PLACE.sub(lambda m: m[1] + str(keys.get(int(m[2]), m[2])), text)

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
                "content": by_names(_UPLOAD.sub(r"/user_uploads/\1", _MENTION_ID.sub(r"\1\2", m["content"]))),
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
                *(sub.get(k) for k in _NOTIFICATION_SETTINGS),
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
            g["name"]: (
                g["description"],
                sorted(group_members.get(g["name"], [])),
                sorted(
                    groups[m["subgroup"]]["name"]
                    for m in realm.get("zerver_groupgroupmembership", [])
                    if m["supergroup"] == g.get("usergroup_ptr", g.get("id")) and m["subgroup"] in groups
                ),
            )
            for g in groups.values()
            if not g["is_system_group"]
        },
        **_permissions(realm, emails),
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
        "default_channels": sorted(streams[d["stream"]]["name"] for d in realm["zerver_defaultstream"]),
        "realm_domains": sorted(
            (d["domain"], d["allow_subdomains"]) for d in realm.get("zerver_realmdomain", [])
        ),
        "playgrounds": sorted(
            (p["name"], p["pygments_language"], p["url_template"])
            for p in realm.get("zerver_realmplayground", [])
        ),
        "statuses": {
            emails[u["user_profile"]]: (u["status_text"], u["emoji_name"])
            for u in realm.get("zerver_userstatus", [])
            if u["status_text"] or u["emoji_name"]
        },
        "snippets": sorted(
            (emails[n["user_profile"]], n["title"], n["content"])
            for n in realm.get("zerver_savedsnippet", [])
        ),
        "navigation_views": sorted(
            (emails.get(v["user"], ""), by_names(v["fragment"]), v["is_pinned"], v["name"] or "")
            for v in realm.get("zerver_navigationview", [])
        ),
        # Pending ones: the sent one is history.
        "scheduled_messages": sorted(
            (
                emails[m["sender"]],
                where(m),
                m["subject"],
                _UPLOAD.sub(r"\1", _MENTION_ID.sub(r"\1\2", m["content"])),
                m["scheduled_timestamp"],
                m["failed"],
            )
            for m in realm.get("zerver_scheduledmessage", [])
            if not m["delivered"] and m["delivery_type"] == 1
        ),
        "channel_folders": sorted(
            (f["name"], f["description"], f["is_archived"], f["order"])
            for f in realm.get("zerver_channelfolder", [])
        ),
        "channel_in_folder": sorted(
            (s["name"], folder_names[s["folder"]]) for s in streams.values() if s.get("folder") is not None
        ),
        # The Notification Bot's text is made again here (it links the message's new ID).
        "reminders": sorted(
            (
                emails[m["sender"]],
                keys[m["reminder_target_message"]],
                m["reminder_note"],
                m["scheduled_timestamp"],
                m["failed"],
            )
            for m in realm.get("zerver_scheduledmessage", [])
            if not m["delivered"] and m["delivery_type"] == 2
        ),
    }


def _permissions(realm: dict[str, Any], emails: dict[int, str]) -> dict[str, Any]:
    """The organization's, each channel's and each group's permission settings, each value
    a named group by name or an anonymous group's direct members and subgroups."""
    groups = {g.get("usergroup_ptr", g.get("id")): g for g in realm["zerver_namedusergroup"]}
    direct_members: dict[int, list[str]] = {}
    for m in realm["zerver_usergroupmembership"]:
        direct_members.setdefault(m["user_group"], []).append(emails[m["user_profile"]])
    direct_subgroups: dict[int, list[str]] = {}
    for m in realm.get("zerver_groupgroupmembership", []):
        direct_subgroups.setdefault(m["supergroup"], []).append(groups[m["subgroup"]]["name"])
    defined = {g["id"] for g in realm["zerver_usergroup"]}

    def who(group_id: int) -> tuple[Any, ...]:
        if group_id in groups:
            return ("group", groups[group_id]["name"])
        if group_id not in defined:
            return ("undefined", group_id)
        return (
            "anonymous",
            sorted(direct_members.get(group_id, [])),
            sorted(direct_subgroups.get(group_id, [])),
        )

    def settings(row: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        names = ("can_", "create_multiuse", "direct_message_")
        return {
            k: who(v) for k, v in row.items() if k.startswith(names) and k.endswith(("_group", "_groups"))
        }

    return {
        "realm_permissions": settings(realm["zerver_realm"][0]),
        "channel_permissions": {s["name"]: settings(s) for s in realm["zerver_stream"]},
        "group_permissions": {g["name"]: settings(g) for g in groups.values() if not g["is_system_group"]},
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
    # does not define. The old server's system bot, an ordinary bot in Palaver, is a system
    # bot again on the way out (the new server's own, by its address).
    before["messages"] = {k: v for k, v in before["messages"].items() if v["topic"] != "void"}
    assert "notification-bot@zulip.com" not in after["users"]
    crossrealm = orjson.loads(read_tarball(back)["realm.json"])["zerver_userprofile_crossrealm"]
    assert [u["email"] for u in crossrealm] == ["notification-bot@zulip.com"]
    # The malformed email domain and the deactivated user's status are refused on the way in.
    before["realm_domains"] = [d for d in before["realm_domains"] if "." in d[0]]
    before["statuses"].pop("old@zulip.test")
    assert len(before["scheduled_messages"]) == 3 and len(before["statuses"]) == 2
    assert len(before["reminders"]) == 1 and len(before["channel_folders"]) == 2
    assert before["channel_in_folder"] == [("Denmark", "Places")]
    # Billing is a setting Palaver does not have: the export writes Zulip's default, the
    # administrators, as the source has. The group Old times names is not in the export, so
    # Palaver's default (nobody) holds that setting.
    assert before["realm_permissions"]["can_manage_billing_group"] == ("group", "role:administrators")
    old_times = before["channel_permissions"]["Old times"]
    assert old_times["can_resolve_topics_group"] == ("undefined", 999)
    old_times["can_resolve_topics_group"] = ("group", "role:nobody")
    assert len(before["realm_permissions"]) == 24 and len(before["group_permissions"]) == 2
    assert all(len(settings) == 11 for settings in before["channel_permissions"].values())
    # The views of a user and of a channel the export lacks, and the custom view without a
    # name, are refused.
    before["navigation_views"] = [
        v for v in before["navigation_views"] if v[0] and "/77" not in v[1] and (v[3] or "/is/dm" not in v[1])
    ]
    assert len(before["navigation_views"]) == 6
    for key in before:
        assert after[key] == before[key], key
