"""A small Slack export with every kind of record the importer reads (Slack's documented
export format: users.json, channels.json, groups.json, dms.json, mpims.json, day files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.images import image_bytes
from tests.importers.conftest import FileServer, write_tree

FILES_HOST = "https://files.slack.example"
NOTES = b"meeting notes\n"
PARROT = image_bytes(32, 32)
DAY1 = 1704189600  # 2024-01-02 10:00 UTC
DAY2 = 1704276000  # 2024-01-03 10:00 UTC


def ts(base: int, n: int) -> str:
    return f"{base + n}.{n:06d}"


def users() -> list[dict[str, Any]]:
    def user(uid: str, name: str, real: str, email: str | None, **flags: Any) -> dict[str, Any]:
        profile: dict[str, Any] = {"real_name": real, "display_name": name}
        if email:
            profile["email"] = email
        if "bot_id" in flags:
            profile["bot_id"] = flags.pop("bot_id")
        return {
            "id": uid,
            "name": name,
            "real_name": real,
            "tz": flags.pop("tz", "UTC"),
            "profile": profile,
            **flags,
        }

    return [
        user(
            "U01",
            "ada",
            "Ada Lovelace",
            "ada@example.com",
            is_owner=True,
            is_primary_owner=True,
            tz="Europe/London",
        ),
        user("U02", "zoe", "Zoë Ångström", "zoe@example.com", is_admin=True, tz="Europe/Stockholm"),
        user("U03", "bob", "Bob Builder", "bob@example.com"),
        user("U04", "gus", "Gus Guest", "gus@example.com", is_restricted=True),
        user("U05", "old", "Old Timer", "old@example.com", deleted=True),
        user("B01", "deploybot", "Deploy Bot", None, is_bot=True, bot_id="BDEPLOY"),
        user("USLACKBOT", "slackbot", "Slackbot", None),
    ]


def export(root: Path, files: FileServer) -> Path:
    files.files["/files/F01/notes.txt"] = NOTES
    files.files["/emoji/partyparrot.png"] = PARROT
    general = [
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U03",
            "text": "<@U03> has joined the channel",
            "ts": ts(DAY1, 0),
        },
        {
            "type": "message",
            "user": "U01",
            "text": (
                "Hello <!channel>, welcome *everyone* to _the_ ~old~ team:"
                " <https://example.com/a_b|our site> &amp; more"
            ),
            "ts": ts(DAY1, 1),
        },
        {
            "type": "message",
            "user": "U02",
            "text": "Question for <@U01>?",
            "ts": ts(DAY1, 2),
            "thread_ts": ts(DAY1, 2),
            "reply_count": 2,
            "reactions": [
                {"name": "+1", "users": ["U01", "U03"], "count": 2},
                {"name": "partyparrot", "users": ["U02"], "count": 1},
                {"name": "wave::skin-tone-3", "users": ["U04"], "count": 1},
                {"name": "no_such_emoji_anywhere", "users": ["U01"], "count": 1},
            ],
        },
        {
            "type": "message",
            "user": "U01",
            "text": "Answer in the thread; see <#C03|prácticas>\n• one\n• two\n```*not bold*```",
            "ts": ts(DAY1, 3),
            "thread_ts": ts(DAY1, 2),
            "parent_user_id": "U02",
            "edited": {"user": "U01", "ts": ts(DAY1, 30)},
        },
        {
            "type": "message",
            "subtype": "thread_broadcast",
            "user": "U03",
            "text": "Also sent to the channel",
            "ts": ts(DAY1, 4),
            "thread_ts": ts(DAY1, 2),
            "root": {"ts": ts(DAY1, 2)},
        },
        {
            "type": "message",
            "subtype": "file_share",
            "user": "U03",
            "text": "here are the notes",
            "ts": ts(DAY1, 5),
            "files": [
                {
                    "id": "F01",
                    "name": "notes.txt",
                    "title": "notes",
                    "mimetype": "text/plain",
                    "user": "U03",
                    "created": DAY1 + 5,
                    "url_private": f"{FILES_HOST}/files/F01/notes.txt",
                    "url_private_download": f"{FILES_HOST}/files/F01/notes.txt",
                },
                {"id": "F02", "mode": "tombstone"},
            ],
        },
        {
            "type": "message",
            "subtype": "bot_message",
            "bot_id": "BDEPLOY",
            "username": "deploybot",
            "text": "Deployed v1",
            "ts": ts(DAY1, 6),
        },
        {"type": "message", "subtype": "huddle_thread", "user": "U01", "text": "", "ts": ts(DAY1, 7)},
        {"type": "message", "user": "U99", "text": "who am I?", "ts": ts(DAY1, 8)},
    ]
    tree: dict[str, Any] = {
        "users.json": users(),
        "channels.json": [
            {
                "id": "C01",
                "name": "general",
                "created": DAY1 - 86400,
                "creator": "U01",
                "is_archived": False,
                "is_general": True,
                "members": ["U01", "U02", "U03", "U04", "B01"],
                "topic": {"value": "Company-wide", "creator": "U01", "last_set": 0},
                "purpose": {"value": "Everything", "creator": "U01", "last_set": 0},
                "pins": [
                    {"id": ts(DAY1, 1), "type": "C", "user": "U02", "owner": "U01", "created": DAY1 + 100}
                ],
            },
            {
                "id": "C02",
                "name": "random",
                "created": DAY1 - 86400,
                "creator": "U01",
                "is_archived": True,
                "members": ["U01", "U05"],
                "topic": {"value": "", "creator": "", "last_set": 0},
                "purpose": {"value": "Off topic", "creator": "U01", "last_set": 0},
            },
            {
                "id": "C03",
                "name": "prácticas",
                "created": DAY1 - 86400,
                "creator": "U02",
                "members": ["U01", "U02"],
                "topic": {"value": "", "creator": "", "last_set": 0},
                "purpose": {"value": "", "creator": "", "last_set": 0},
            },
        ],
        "groups.json": [
            {
                "id": "G01",
                "name": "secret-plans",
                "created": DAY1 - 86400,
                "creator": "U02",
                "is_archived": False,
                "members": ["U01", "U02"],
                "topic": {"value": "", "creator": "", "last_set": 0},
                "purpose": {"value": "Do not tell Bob", "creator": "U02", "last_set": 0},
            }
        ],
        "dms.json": [{"id": "D01", "created": DAY1, "members": ["U01", "U03"]}],
        "mpims.json": [
            {
                "id": "G02",
                "name": "mpdm-ada--zoe--bob-1",
                "created": DAY1,
                "creator": "U01",
                "is_archived": False,
                "members": ["U01", "U02", "U03"],
            }
        ],
        # Google Drive was added, then removed; the GitHub app is still installed.
        "integration_logs.json": [
            {
                "service_id": "S1",
                "service_type": "Google Drive",
                "user_id": "U01ADA",
                "date": "1704067300",
                "change_type": "removed",
                "reason": "user",
            },
            {
                "app_id": "A1",
                "app_type": "GitHub",
                "user_id": "U01ADA",
                "date": "1704067250",
                "change_type": "added",
                "scope": "incoming-webhook",
                "channel": "general",
            },
            {
                "service_id": "S1",
                "service_type": "Google Drive",
                "user_id": "U01ADA",
                "date": "1704067200",
                "change_type": "added",
            },
        ],
        "emoji.json": {"partyparrot": f"{FILES_HOST}/emoji/partyparrot.png", "pp": "alias:partyparrot"},
        "general/2024-01-02.json": general,
        "general/2024-01-03.json": [
            {"type": "message", "subtype": "me_message", "user": "U02", "text": "waves", "ts": ts(DAY2, 1)},
        ],
        "random/2024-01-01.json": [
            {"type": "message", "user": "U05", "text": "An old message", "ts": ts(DAY1 - 86400, 1)},
        ],
        "prácticas/2024-01-02.json": [
            {"type": "message", "user": "U02", "text": "¡Hola, señor!", "ts": ts(DAY1, 9)},
        ],
        "secret-plans/2024-01-02.json": [
            {"type": "message", "user": "U02", "text": "The secret plan", "ts": ts(DAY1, 10)},
        ],
        "D01/2024-01-02.json": [
            {"type": "message", "user": "U03", "text": "hi <@U01>", "ts": ts(DAY1, 11)},
            {"type": "message", "user": "U01", "text": "hi Bob", "ts": ts(DAY1, 12)},
        ],
        "mpdm-ada--zoe--bob-1/2024-01-02.json": [
            {"type": "message", "user": "U02", "text": "all three of us", "ts": ts(DAY1, 13)},
        ],
    }
    return write_tree(root, tree)
