"""A small Zulip organization export, in the format ``manage.py export`` writes (realm.json
with the tables as lists of rows, messages-NNNNNN.json, attachment.json, uploads/, avatars/,
emoji/ with their records.json), as a tarball of one directory."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from tests.images import image_bytes
from tests.importers.conftest import write_tree

REALM_ID = 2
NOTES = b"notes from the meeting\n"
TICK = image_bytes(24, 24, colour="green")
FACE = image_bytes(64, 64, colour="blue")
T0 = 1_704_189_600.0  # 2024-01-02 10:00 UTC
UPLOAD_PATH = f"{REALM_ID}/4e/Xa1b2c3d4/notes.txt"
# Users by ID: (email, full name, role, is_bot, is_active).
USERS = {
    5: ("iago@zulip.test", "Iago", 100, False, True),
    6: ("hamlet@zulip.test", "King Hamlet", 400, False, True),
    7: ("zoe@zulip.test", "Zoë Ñandú", 300, False, True),
    8: ("guest@zulip.test", "Polonius", 600, False, True),
    9: ("old@zulip.test", "Old User", 400, False, False),
    10: ("feed-bot@zulip.test", "Feed Bot", 400, True, True),
}
STREAMS = {  # id: (name, recipient, invite_only, history_public, deactivated, description)
    20: ("Denmark", 120, False, True, False, "A city in Shakespeare"),
    21: ("Verona private", 121, True, False, False, "Only the few"),
    22: ("Old times", 122, False, True, True, ""),
    23: ("Public square", 123, False, True, False, "Readable without an account"),
}
HUDDLE_RECIPIENT = 130


def personal_recipient(user_id: int) -> int:
    return 100 + user_id


def user_row(user_id: int) -> dict[str, Any]:
    email, name, role, is_bot, active = USERS[user_id]
    return {
        "id": user_id,
        "realm": REALM_ID,
        "email": email,
        "delivery_email": email,
        "full_name": name,
        "role": role,
        "is_bot": is_bot,
        "bot_type": 1 if is_bot else None,
        "bot_owner": 5 if is_bot else None,
        "is_active": active,
        "is_mirror_dummy": False,
        "timezone": "Europe/Copenhagen" if user_id == 6 else "",
        "date_joined": T0 - 86400 * 30,
        "avatar_source": "U" if user_id == 6 else "G",
        "recipient": personal_recipient(user_id),
    }


def message(
    mid: int, sender: int, recipient: int, content: str, topic: str = "", **extra: Any
) -> dict[str, Any]:
    return {
        "id": mid,
        "realm": REALM_ID,
        "sender": sender,
        "recipient": recipient,
        "subject": topic,
        "content": content,
        "rendered_content": None,
        "rendered_content_version": None,
        "date_sent": T0 + mid,
        "last_edit_time": None,
        "edit_history": None,
        "has_attachment": False,
        "has_image": False,
        "has_link": False,
        "sending_client": 1,
        **extra,
    }


def messages() -> list[dict[str, Any]]:
    return [
        message(1001, 5, 120, "Hello @**King Hamlet|6** and @**all**, see #123", "greetings"),
        message(1002, 6, 120, f"[notes.txt](/user_uploads/{UPLOAD_PATH})", "greetings", has_attachment=True),
        message(
            1003,
            7,
            120,
            "This was edited",
            "édition",
            last_edit_time=T0 + 5000,
            edit_history=(
                '[{"user_id": 7, "timestamp": 1704194600, "prev_content": "This was wrong",'
                ' "prev_rendered_content": "<p>This was wrong</p>", "prev_rendered_content_version": 1}]'
            ),
        ),
        message(1004, 5, 121, "A private word", "plans"),
        message(1005, 9, 122, "From the old days", "history"),
        message(1006, 5, personal_recipient(6), "A direct word for @_**King Hamlet|6**"),
        message(1007, 7, HUDDLE_RECIPIENT, "The three of us"),
        message(1008, 1, 120, "**Iago** created this channel.", "channel events"),
        message(1009, 5, 999, "Nowhere to go", "void"),
    ]


def user_messages() -> list[dict[str, Any]]:
    read, starred, mentioned, wildcard, private = 1, 2, 8, 16, 256
    rows = [
        (1001, 5, read),
        (1001, 6, read | starred | mentioned),
        (1001, 7, wildcard),  # Zoë has not read it yet
        (1002, 5, read),
        (1002, 6, read),
        (1003, 7, read),
        (1003, 5, read),
        (1004, 5, read),
        (1005, 9, read),
        (1006, 5, read | private),
        (1006, 6, private | mentioned),
        (1007, 5, read | private),
        (1007, 6, read | private),
        (1007, 7, read | private),
        (1008, 5, read),
    ]
    return [
        {"id": n, "user_profile": user, "message": mid, "flags_mask": flags}
        for n, (mid, user, flags) in enumerate(rows, 1)
    ]


def realm_tables() -> dict[str, list[dict[str, Any]]]:
    subscriptions: list[dict[str, Any]] = []

    def subscribe(user: int, recipient: int, **settings: Any) -> None:
        subscriptions.append(
            {
                "id": len(subscriptions) + 1,
                "user_profile": user,
                "recipient": recipient,
                "active": settings.pop("active", True),
                "color": settings.pop("color", "#c2c2c2"),
                "is_muted": settings.pop("is_muted", False),
                "pin_to_top": settings.pop("pin_to_top", False),
            }
        )

    for user in USERS:
        subscribe(user, personal_recipient(user))
    for user in (5, 6, 7, 8, 10):
        subscribe(user, 120, color="#76ce90" if user == 6 else "#c2c2c2", pin_to_top=user == 6)
    subscribe(9, 120, active=False)  # left Denmark
    subscribe(5, 121)
    subscribe(7, 121, is_muted=True)
    subscribe(9, 122)
    subscribe(5, 122)
    for user in (5, 6, 7):
        subscribe(user, HUDDLE_RECIPIENT)
    recipients = [{"id": personal_recipient(u), "type": 1, "type_id": u} for u in USERS]
    recipients += [{"id": s[1], "type": 2, "type_id": sid} for sid, s in STREAMS.items()]
    recipients.append({"id": HUDDLE_RECIPIENT, "type": 3, "type_id": 40})
    return {
        "zerver_realm": [
            {
                "id": REALM_ID,
                "string_id": "zulip",
                "name": "Zulip Dev",
                "description": "The Zulip development environment",
                "date_created": T0 - 86400 * 60,
                "deactivated": False,
                "invite_required": True,
                "enable_spectator_access": True,
                "waiting_period_threshold": 3,
                "default_language": "de",
                "message_content_edit_limit_seconds": 3600,
            }
        ],
        "zerver_userprofile": [user_row(u) for u in USERS],
        "zerver_userprofile_mirrordummy": [],
        "zerver_userprofile_crossrealm": [
            {"email": "notification-bot@zulip.com", "id": 1, "recipient_id": 1}
        ],
        "zerver_stream": [
            {
                "id": sid,
                "realm": REALM_ID,
                "name": name,
                "description": description,
                "invite_only": invite_only,
                "history_public_to_subscribers": history_public,
                "is_web_public": sid == 23,
                "deactivated": deactivated,
                "date_created": T0 - 86400 * 10,
                "creator": 5,
                "recipient": recipient,
            }
            for sid, (
                name,
                recipient,
                invite_only,
                history_public,
                deactivated,
                description,
            ) in STREAMS.items()
        ],
        "zerver_recipient": recipients,
        "zerver_subscription": subscriptions,
        "zerver_huddle": [
            {"id": 40, "huddle_hash": "0" * 40, "group_size": 3, "recipient": HUDDLE_RECIPIENT}
        ],
        "zerver_reaction": [
            {
                "id": 1,
                "user_profile": 6,
                "message": 1001,
                "emoji_name": "thumbs_up",
                "emoji_code": "1f44d",
                "reaction_type": "unicode_emoji",
            },
            {
                "id": 2,
                "user_profile": 7,
                "message": 1001,
                "emoji_name": "green_tick",
                "emoji_code": "3",
                "reaction_type": "realm_emoji",
            },
            {
                "id": 3,
                "user_profile": 5,
                "message": 1007,
                "emoji_name": "heart",
                "emoji_code": "2764",
                "reaction_type": "unicode_emoji",
            },
        ],
        "zerver_realmemoji": [
            {
                "id": 3,
                "realm": REALM_ID,
                "name": "green_tick",
                "file_name": "3.png",
                "author": 5,
                "deactivated": False,
            }
        ],
        "zerver_usergroup": [{"id": 50, "realm": REALM_ID}, {"id": 51, "realm": REALM_ID}],
        "zerver_namedusergroup": [
            {
                "usergroup_ptr": 50,
                "name": "role:owners",
                "description": "Owners",
                "is_system_group": True,
                "deactivated": False,
            },
            {
                "usergroup_ptr": 51,
                "name": "backend",
                "description": "Backend team",
                "is_system_group": False,
                "deactivated": False,
            },
        ],
        "zerver_usergroupmembership": [
            {"id": 1, "user_group": 50, "user_profile": 5},
            {"id": 2, "user_group": 51, "user_profile": 6},
            {"id": 3, "user_group": 51, "user_profile": 7},
        ],
        "zerver_customprofilefield": [
            {
                "id": 60,
                "realm": REALM_ID,
                "name": "Phone number",
                "hint": "",
                "field_type": 1,
                "field_data": "",
                "order": 1,
            },
            {
                "id": 61,
                "realm": REALM_ID,
                "name": "Mentor",
                "hint": "Who to ask",
                "field_type": 6,
                "field_data": "",
                "order": 2,
            },
        ],
        "zerver_customprofilefieldvalue": [
            {"id": 1, "field": 60, "user_profile": 6, "value": "+45 555 0100", "rendered_value": None},
            {"id": 2, "field": 61, "user_profile": 6, "value": "[5]", "rendered_value": None},
        ],
        "zerver_realmfilter": [
            {
                "id": 1,
                "realm": REALM_ID,
                "pattern": "#(?P<id>[0-9]+)",
                "url_template": "https://github.com/zulip/zulip/issues/{id}",
            }
        ],
        # Zulip's visibility policies: 1 muted, 2 unmuted, 3 followed.
        "zerver_usertopic": [
            {
                "id": 1,
                "user_profile": 6,
                "stream": 20,
                "recipient": 120,
                "topic_name": "Castle",
                "visibility_policy": 3,
                "last_updated": T0 + 5000,
            },
            {
                "id": 2,
                "user_profile": 6,
                "stream": 20,
                "recipient": 120,
                "topic_name": "gossip",
                "visibility_policy": 1,
                "last_updated": T0 + 5001,
            },
            {
                "id": 3,
                "user_profile": 7,
                "stream": 21,
                "recipient": 121,
                "topic_name": "plans",
                "visibility_policy": 2,
                "last_updated": T0 + 5002,
            },
            {
                "id": 4,
                "user_profile": 99,
                "stream": 20,
                "recipient": 120,
                "topic_name": "ghost",
                "visibility_policy": 1,
                "last_updated": T0 + 5003,
            },
        ],
        "zerver_muteduser": [
            {"id": 1, "user_profile": 6, "muted_user": 8, "date_muted": T0 + 6000},
        ],
        "zerver_alertword": [
            {"id": 1, "user_profile": 6, "realm": REALM_ID, "word": "Ophelia"},
            {"id": 2, "user_profile": 6, "realm": REALM_ID, "word": "to be or not"},
        ],
        "zerver_client": [{"id": 1, "name": "website"}],
        "zerver_defaultstream": [{"id": 1, "realm": REALM_ID, "stream": 20}],
    }


def export(root: Path) -> Path:
    """Writes the export directory under ``root`` and returns the tarball of it."""
    directory = root / "zulip-export-abc123"
    write_tree(
        directory,
        {
            "realm.json": realm_tables(),
            "messages-000001.json": {"zerver_message": messages(), "zerver_usermessage": user_messages()},
            "attachment.json": {
                "zerver_attachment": [
                    {
                        "id": 70,
                        "realm": REALM_ID,
                        "owner": 6,
                        "file_name": "notes.txt",
                        "path_id": UPLOAD_PATH,
                        "size": len(NOTES),
                        "create_time": T0 + 1002,
                        "is_realm_public": True,
                        "is_web_public": False,
                        "messages": [1002],
                        "scheduled_messages": [],
                    }
                ]
            },
            "uploads/records.json": [
                {
                    "realm_id": REALM_ID,
                    "user_profile_id": 6,
                    "user_profile_email": "hamlet@zulip.test",
                    "s3_path": UPLOAD_PATH,
                    "path": UPLOAD_PATH,
                    "size": len(NOTES),
                    "last_modified": T0,
                    "content_type": None,
                }
            ],
            f"uploads/{UPLOAD_PATH}": NOTES,
            "emoji/records.json": [
                {
                    "realm_id": REALM_ID,
                    "author": 5,
                    "path": f"{REALM_ID}/emoji/images/3.png",
                    "s3_path": f"{REALM_ID}/emoji/images/3.png",
                    "file_name": "3.png",
                    "name": "green_tick",
                    "deactivated": False,
                }
            ],
            f"emoji/{REALM_ID}/emoji/images/3.png": TICK,
            "avatars/records.json": [
                {
                    "realm_id": REALM_ID,
                    "user_profile_id": 6,
                    "user_profile_email": "hamlet@zulip.test",
                    "s3_path": f"{REALM_ID}/0a1b2c.original",
                    "path": f"{REALM_ID}/0a1b2c.original",
                    "size": len(FACE),
                    "last_modified": T0,
                    "content_type": None,
                }
            ],
            f"avatars/{REALM_ID}/0a1b2c.original": FACE,
            "analytics.json": {
                "analytics_realmcount": [],
                "analytics_streamcount": [],
                "analytics_usercount": [],
            },
        },
    )
    tarball = root / "zulip-export-abc123.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(directory, arcname=directory.name)
    return tarball
