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
CASTLE = "#narrow/channel/20-Denmark/topic/Castle"  # a link by the channel's ID in the export
GREETING = "#narrow/channel/20-Denmark/topic/greetings/near/1001"  # by the message's ID
SCHEDULED_AT = 4_102_444_800.0  # 2100-01-01 00:00 UTC
SCHEDULED_UPLOAD_PATH = f"{REALM_ID}/7c/Yb2c3d4e5/minutes.txt"
MINUTES = b"minutes of the meeting\n"


# User groups by ID: Zulip's system groups (Palaver names them alike), the organization's
# own, and anonymous ones (no zerver_namedusergroup row), each made for a setting.
EVERYONE, ADMINISTRATORS, MEMBERS, NOBODY, MODERATORS, FULL_MEMBERS, INTERNET, OWNERS = (
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    50,
)
SYSTEM_GROUPS = {
    EVERYONE: "role:everyone",
    ADMINISTRATORS: "role:administrators",
    MEMBERS: "role:members",
    NOBODY: "role:nobody",
    MODERATORS: "role:moderators",
    FULL_MEMBERS: "role:fullmembers",
    INTERNET: "role:internet",
    OWNERS: "role:owners",
}
BACKEND, ENGINEERING = 51, 52
# Anonymous groups: (member user IDs, subgroup IDs).
ANONYMOUS_GROUPS = {
    80: ([6], [BACKEND]),  # Hamlet and the backend team
    81: ([5], []),  # Iago alone
    82: ([7], [OWNERS]),  # Zoë and the owners
    83: ([6, 7], []),
}
UNDEFINED_GROUP = 999
# The organization's permission settings: every one Zulip has (Palaver has all but billing).
REALM_GROUP_SETTINGS = {
    "can_access_all_users_group": EVERYONE,
    "can_add_custom_emoji_group": ENGINEERING,
    "can_add_subscribers_group": MEMBERS,
    "can_create_bots_group": MEMBERS,
    "can_create_groups": MEMBERS,
    "can_create_private_channel_group": MODERATORS,
    "can_create_public_channel_group": MEMBERS,
    "can_create_web_public_channel_group": OWNERS,
    "can_create_write_only_bots_group": FULL_MEMBERS,
    "can_delete_any_message_group": ADMINISTRATORS,
    "can_delete_own_message_group": EVERYONE,
    "can_invite_users_group": 80,
    "can_manage_all_groups": OWNERS,
    "can_manage_billing_group": ADMINISTRATORS,
    "can_mention_many_users_group": 81,
    "can_move_messages_between_channels_group": MEMBERS,
    "can_move_messages_between_topics_group": EVERYONE,
    "can_resolve_topics_group": EVERYONE,
    "can_set_delete_message_policy_group": MODERATORS,
    "can_set_topics_policy_group": MODERATORS,
    "can_summarize_topics_group": EVERYONE,
    "create_multiuse_invite_group": ADMINISTRATORS,
    "direct_message_initiator_group": EVERYONE,
    "direct_message_permission_group": MEMBERS,
}


def stream_group_settings(stream_id: int) -> dict[str, int]:
    """Each channel's permission settings; Old times names a group the export lacks."""
    return {
        "can_add_subscribers_group": NOBODY,
        "can_administer_channel_group": ENGINEERING if stream_id == 20 else 81,
        "can_create_topic_group": EVERYONE,
        "can_delete_any_message_group": ADMINISTRATORS,
        "can_delete_own_message_group": EVERYONE if stream_id != 21 else NOBODY,
        "can_move_messages_out_of_channel_group": NOBODY,
        "can_move_messages_within_channel_group": 83 if stream_id == 20 else NOBODY,
        "can_remove_subscribers_group": ADMINISTRATORS,
        "can_resolve_topics_group": UNDEFINED_GROUP if stream_id == 22 else NOBODY,
        "can_send_message_group": 82 if stream_id == 21 else EVERYONE,
        "can_subscribe_group": NOBODY,
    }


def group_settings(group_id: int) -> dict[str, int]:
    return {
        "can_add_members_group": NOBODY,
        "can_join_group": EVERYONE if group_id == ENGINEERING else NOBODY,
        "can_leave_group": EVERYONE,
        "can_manage_group": 83 if group_id == ENGINEERING else 81,
        "can_mention_group": BACKEND if group_id == ENGINEERING else EVERYONE,
        "can_remove_members_group": NOBODY,
    }


def personal_recipient(user_id: int) -> int:
    return 100 + user_id


# Hamlet's own settings; the emoji set is one Palaver does not offer.
HAMLET_SETTINGS = {
    "twenty_four_hour_time": True,
    "enter_sends": True,
    "color_scheme": 2,
    "default_language": "fr",
    "emojiset": "apple",
}


def user_row(user_id: int) -> dict[str, Any]:
    email, name, role, is_bot, active = USERS[user_id]
    return (HAMLET_SETTINGS if user_id == 6 else {}) | {
        "id": user_id,
        "realm": REALM_ID,
        "email": email,
        "delivery_email": email,
        "full_name": name,
        "role": role,
        "is_bot": is_bot,
        "bot_type": 3 if is_bot else None,  # an outgoing-webhook bot (zerver_service below)
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
        message(
            1005,
            9,
            122,
            f"From the old days, as [in Denmark]({CASTLE}) since [the greeting]({GREETING})",
            "history",
        ),
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


CHANNEL_FOLDERS = [
    {
        "id": 3,
        "realm": REALM_ID,
        "name": "Places",
        "description": "Cities and **towns**",
        "rendered_description": "<p>Cities and <strong>towns</strong></p>",
        "date_created": T0 - 86400 * 11,
        "creator": 5,
        "is_archived": False,
        "order": 1,
    },
    {
        "id": 4,
        "realm": REALM_ID,
        "name": "Gone",
        "description": "",
        "rendered_description": "",
        "date_created": T0 - 86400 * 11,
        "creator": 5,
        "is_archived": True,
        "order": 0,
    },
]


def scheduled(
    sid: int, sender: int, recipient: int, content: str, topic: str = "", **extra: Any
) -> dict[str, Any]:
    stream = next((s for s, row in STREAMS.items() if row[1] == recipient), None)
    return {
        "id": sid,
        "realm": REALM_ID,
        "sender": sender,
        "recipient": recipient,
        "stream": stream,
        "subject": topic,
        "content": content,
        "rendered_content": f"<p>{content}</p>",
        "sending_client": 1,
        "scheduled_timestamp": SCHEDULED_AT,
        "request_timestamp": T0 + 7000,
        "read_by_sender": True,
        "delivered": False,
        "delivered_message": None,
        "has_attachment": False,
        "failed": False,
        "failure_message": None,
        "delivery_type": 1,
        "reminder_target_message": None,
        "reminder_note": None,
        **extra,
    }


def scheduled_messages() -> list[dict[str, Any]]:
    return [
        scheduled(1, 5, 120, "Meeting at noon, @**King Hamlet|6**", "plans"),
        scheduled(
            2, 6, personal_recipient(5), f"The minutes: [notes.txt](/user_uploads/{SCHEDULED_UPLOAD_PATH})"
        ),
        scheduled(3, 5, 120, "Sent long ago", "plans", delivered=True, delivered_message=1001),
        scheduled(
            4,
            6,
            personal_recipient(6),
            "Remember this",
            delivery_type=2,
            reminder_target_message=1001,
            reminder_note="Reply to Iago",
        ),
        scheduled(5, 7, HUDDLE_RECIPIENT, "For the three of us", failed=True, failure_message="Not allowed"),
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
    # Hamlet's own notification choices for Denmark.
    subscriptions[-4].update(
        desktop_notifications=False, push_notifications=True, wildcard_mentions_notify=False
    )
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
                **REALM_GROUP_SETTINGS,
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
        "zerver_service": [
            {
                "id": 1,
                "user_profile": 10,
                "name": "feed",
                "base_url": "https://feeds.example.net/zulip",
                "token": "old-secret",
                "interface": 1,
            }
        ],
        "zerver_userprofile_mirrordummy": [],
        "zerver_userprofile_crossrealm": [
            {"email": "notification-bot@zulip.com", "id": 1, "recipient_id": 1}
        ],
        "zerver_channelfolder": CHANNEL_FOLDERS,
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
                "folder": CHANNEL_FOLDERS[0]["id"] if sid == 20 else None,
                **stream_group_settings(sid),
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
        "zerver_usergroup": [
            {"id": group_id, "realm": REALM_ID}
            for group_id in [*SYSTEM_GROUPS, ENGINEERING, BACKEND, *ANONYMOUS_GROUPS]
        ],
        "zerver_namedusergroup": [
            {
                "usergroup_ptr": group_id,
                "name": name,
                "description": name.removeprefix("role:").title(),
                "is_system_group": True,
                "deactivated": False,
                **dict.fromkeys(group_settings(0), NOBODY),
            }
            for group_id, name in SYSTEM_GROUPS.items()
        ]
        + [
            {
                "usergroup_ptr": BACKEND,
                "name": "backend",
                "description": "Backend team",
                "is_system_group": False,
                "deactivated": False,
                **group_settings(BACKEND),
            },
            {
                "usergroup_ptr": ENGINEERING,
                "name": "engineering",
                "description": "Everyone who builds",
                "is_system_group": False,
                "deactivated": False,
                **group_settings(ENGINEERING),
            },
        ],
        # Engineering holds backend (listed first, so the import must order them).
        "zerver_groupgroupmembership": [
            {"id": n, "supergroup": supergroup, "subgroup": subgroup}
            for n, (supergroup, subgroup) in enumerate(
                [
                    (ENGINEERING, BACKEND),
                    *((g, s) for g, (_, subgroups) in ANONYMOUS_GROUPS.items() for s in subgroups),
                ],
                1,
            )
        ],
        "zerver_usergroupmembership": [
            {"id": n, "user_group": group, "user_profile": user}
            for n, (group, user) in enumerate(
                [
                    (OWNERS, 5),
                    (BACKEND, 6),
                    (BACKEND, 7),
                    (ENGINEERING, 5),
                    *((g, u) for g, (members, _) in ANONYMOUS_GROUPS.items() for u in members),
                ],
                1,
            )
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
        "zerver_scheduledmessage": scheduled_messages(),
        "zerver_userstatus": [
            {
                "id": 1,
                "user_profile": 6,
                "client": 1,
                "timestamp": T0 + 8000,
                "status_text": "In a meeting",
                "emoji_name": "green_tick",
                "emoji_code": "3",
                "reaction_type": "realm_emoji",
            },
            {
                "id": 2,
                "user_profile": 7,
                "client": 1,
                "timestamp": T0 + 8001,
                "status_text": "En vacances",
                "emoji_name": "palm_tree",
                "emoji_code": "1f334",
                "reaction_type": "unicode_emoji",
            },
            {
                "id": 3,
                "user_profile": 9,
                "client": 1,
                "timestamp": T0,
                "status_text": "Gone",
                "emoji_name": "",
            },
        ],
        "zerver_savedsnippet": [
            {
                "id": 1,
                "realm": REALM_ID,
                "user_profile": 6,
                "title": "Greeting",
                "content": "Good morning, **everyone**!",
                "date_created": T0 + 8100,
            }
        ],
        # Hamlet's inbox pinned, recent conversations hidden and a view of his own; Zoë's view
        # of a message's place; a view of the deactivated user's; one of a user the export
        # lacks, one of a channel it lacks, and a custom view without the name Palaver (and
        # Zulip) require of one.
        "zerver_navigationview": [
            {"id": n, "user": user, "fragment": fragment, "is_pinned": pinned, "name": name}
            for n, (user, fragment, pinned, name) in enumerate(
                [
                    (6, "inbox", True, None),
                    (6, "recent", False, None),
                    (6, "narrow/channel/20-Denmark/topic/Castle", True, "Castle talk"),
                    (7, "narrow/channel/20-Denmark/topic/greetings/near/1001", False, "Where it began"),
                    (6, "narrow/channel/77-Nowhere", False, "Lost"),
                    (7, "narrow/is/starred", True, None),
                    (9, "feed", True, None),
                    (99, "inbox", True, None),
                    (7, "narrow/is/dm", False, None),
                ],
                1,
            )
        ],
        "zerver_realmdomain": [
            {"id": 1, "realm": REALM_ID, "domain": "zulip.test", "allow_subdomains": True},
            {"id": 2, "realm": REALM_ID, "domain": "not a domain", "allow_subdomains": False},
        ],
        "zerver_realmplayground": [
            {
                "id": 1,
                "realm": REALM_ID,
                "name": "Python playground",
                "pygments_language": "Python",
                "url_template": "https://python.example/?code={code}",
            }
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
                    },
                    {
                        "id": 71,
                        "realm": REALM_ID,
                        "owner": 6,
                        "file_name": "minutes.txt",
                        "path_id": SCHEDULED_UPLOAD_PATH,
                        "size": len(MINUTES),
                        "create_time": T0 + 7000,
                        "is_realm_public": False,
                        "is_web_public": False,
                        "messages": [],
                        "scheduled_messages": [2],
                    },
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
            f"uploads/{SCHEDULED_UPLOAD_PATH}": MINUTES,
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
