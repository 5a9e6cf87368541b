"""A small Mattermost bulk export (``mmctl export create``'s zip: import.jsonl and data/), with
two teams, from Mattermost's documented bulk-loading format."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import orjson

from tests.images import image_bytes

REPORT = b"%PDF-1.4 quarterly report\n"
PARROT = image_bytes(32, 32, colour="purple")
T0 = 1_704_189_600_000  # 2024-01-02 10:00 UTC, in milliseconds


def lines() -> list[dict[str, Any] | bytes]:
    def user(
        name: str,
        first: str,
        last: str,
        roles: str,
        channels: list[str],
        team_roles: str = "team_user",
        channel_admin: tuple[str, ...] = (),
        **extra: Any,
    ) -> dict[str, Any]:
        return {
            "type": "user",
            "user": {
                "username": name,
                "email": f"{name}@example.com",
                "first_name": first,
                "last_name": last,
                "roles": roles,
                "teams": [
                    {
                        "name": "ops",
                        "roles": team_roles,
                        "channels": [
                            {
                                "name": c,
                                "roles": "channel_user channel_admin"
                                if c in channel_admin
                                else "channel_user",
                            }
                            for c in channels
                        ],
                    }
                ],
                **extra,
            },
        }

    def post(user: str, channel: str, message: str, at: int, **extra: Any) -> dict[str, Any]:
        return {
            "type": "post",
            "post": {
                "team": "ops",
                "channel": channel,
                "user": user,
                "message": message,
                "create_at": T0 + at,
                **extra,
            },
        }

    return [
        {"type": "version", "version": 1},
        {"type": "emoji", "emoji": {"name": "parrot", "image": "data/emoji/parrot/image"}},
        {
            "type": "team",
            "team": {"name": "ops", "display_name": "Ops Team", "type": "O", "description": "Operations"},
        },
        {"type": "team", "team": {"name": "other", "display_name": "Other", "type": "O"}},
        {
            "type": "channel",
            "channel": {
                "team": "ops",
                "name": "town-square",
                "display_name": "Town Square",
                "type": "O",
                "header": "Welcome",
                "purpose": "Everyone",
            },
        },
        {
            "type": "channel",
            "channel": {"team": "ops", "name": "secret", "display_name": "Sécret", "type": "P"},
        },
        {
            "type": "channel",
            "channel": {"team": "ops", "name": "old", "display_name": "Old", "type": "O", "deleted_at": T0},
        },
        {
            "type": "channel",
            "channel": {"team": "other", "name": "town-square", "display_name": "Town Square", "type": "O"},
        },
        user("alice", "Alice", "Ångström", "system_user system_admin", ["town-square", "secret", "old"]),
        user(
            "bob",
            "Bob",
            "Builder",
            "system_user",
            ["town-square"],
            team_roles="team_user team_admin",
            channel_admin=("town-square",),
        ),
        user("carol", "Carol", "Guest", "system_guest", ["town-square"], team_roles="team_guest"),
        user("dave", "Dave", "Gone", "system_user", ["old"], delete_at=T0),
        {"type": "bot", "bot": {"username": "buildbot", "display_name": "Build Bot", "owner": "alice"}},
        post(
            "alice",
            "town-square",
            "Hello @bob and @channel, see ~secret",
            1000,
            flagged_by=["bob"],
            reactions=[
                {"user": "bob", "emoji_name": "+1", "create_at": T0 + 1500},
                {"user": "carol", "emoji_name": "parrot", "create_at": T0 + 1600},
            ],
            replies=[
                {"user": "bob", "message": "reply **one**", "create_at": T0 + 2000},
                {"user": "carol", "message": "reply two", "create_at": T0 + 3000, "edit_at": T0 + 9000},
            ],
        ),
        post("bob", "town-square", "with file", 4000, attachments=[{"path": "data/files/report.pdf"}]),
        post("alice", "secret", "secret stuff", 5000),
        post("dave", "old", "old post", 500),
        {
            "type": "post",
            "post": {
                "team": "other",
                "channel": "town-square",
                "user": "alice",
                "message": "elsewhere",
                "create_at": T0 + 6000,
            },
        },
        post("ghost", "town-square", "who is this", 7000),
        {"type": "direct_channel", "direct_channel": {"members": ["alice", "bob"]}},
        {
            "type": "direct_post",
            "direct_post": {
                "channel_members": ["alice", "bob"],
                "user": "alice",
                "message": "hi bob",
                "create_at": T0 + 8000,
            },
        },
        {
            "type": "direct_post",
            "direct_post": {
                "channel_members": ["alice", "bob", "carol"],
                "user": "carol",
                "message": "group hi",
                "create_at": T0 + 8500,
            },
        },
        b"this line is not JSON",
        {"type": "widget", "widget": {}},
    ]


def export(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "mattermost_export.zip"
    body = b"".join((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n" for line in lines())
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("import.jsonl", body)
        zf.writestr("data/files/report.pdf", REPORT)
        zf.writestr("data/emoji/parrot/image", PARROT)
    return path
