"""A small Rocket.Chat database dump as ``mongodump`` writes it (dump/rocketchat/<collection>.bson),
with uploads and custom emoji in GridFS buckets, tarred."""

from __future__ import annotations

import tarfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import bson
import orjson

from tests.images import image_bytes

T0 = datetime(2024, 1, 2, 10, 0, 0)
NOTES = b"rocket notes\n" * 100  # more than one GridFS chunk of 512 bytes
PARROT = image_bytes(32, 32, colour="orange")
CHUNK = 512


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def user(uid: str, username: str, name: str, roles: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "_id": uid,
        "username": username,
        "name": name,
        "emails": [{"address": f"{username}@example.com", "verified": True}],
        "roles": roles,
        "active": extra.pop("active", True),
        "type": extra.pop("type", "user"),
        "createdAt": at(-86400 * 30),
        **extra,
    }


def message(
    mid: str, room: str, sender: tuple[str, str], text: str, seconds: int, **extra: Any
) -> dict[str, Any]:
    return {
        "_id": mid,
        "rid": room,
        "msg": text,
        "ts": at(seconds),
        "u": {"_id": sender[0], "username": sender[1]},
        **extra,
    }


def collections() -> dict[str, list[dict[str, Any]]]:
    ana, ben, cleo, dov = ("u1", "ana"), ("u2", "ben"), ("u3", "cleo"), ("u4", "dov")
    upload_id, emoji_file = "up1", "em1"
    return {
        "users": [
            user("u1", "ana", "Ana Ångel", ["admin", "user"]),
            user("u2", "ben", "Ben Builder", ["user"]),
            user("u3", "cleo", "Cleo Guest", ["guest"]),
            user("u4", "dov", "Dov Departed", ["user"], active=False),
            user("rocket.cat", "rocket.cat", "Rocket Cat", ["bot"], type="bot"),
        ],
        "rocketchat_room": [
            {
                "_id": "GENERAL",
                "t": "c",
                "name": "general",
                "fname": "general",
                "topic": "Everything",
                "ts": at(-86400),
                "u": {"_id": "u1", "username": "ana"},
            },
            {
                "_id": "r2",
                "t": "p",
                "name": "core-team",
                "fname": "Core Téam",
                "description": "The few",
                "ts": at(-86400),
            },
            {"_id": "r3", "t": "c", "name": "old", "fname": "old", "archived": True, "ts": at(-86400)},
            {"_id": "u1u2", "t": "d", "usernames": ["ana", "ben"], "uids": ["u1", "u2"]},
            {"_id": "grp", "t": "d", "usernames": ["ana", "ben", "cleo"], "uids": ["u1", "u2", "u3"]},
            {"_id": "live", "t": "l", "name": "livechat"},
        ],
        "rocketchat_subscription": [
            {"_id": f"s{n}", "rid": rid, "u": {"_id": uid, "username": name}}
            for n, (rid, uid, name) in enumerate(
                [
                    ("GENERAL", "u1", "ana"),
                    ("GENERAL", "u2", "ben"),
                    ("GENERAL", "u3", "cleo"),
                    ("r2", "u1", "ana"),
                    ("r3", "u4", "dov"),
                ]
            )
        ],
        "rocketchat_message": [
            message("m0", "GENERAL", ben, "", 0, t="uj"),
            message(
                "m1",
                "GENERAL",
                ana,
                "Hi @ben and @all, see #core-team",
                10,
                tcount=2,
                reactions={":+1:": {"usernames": ["ben", "cleo"]}, ":parrot:": {"usernames": ["ana"]}},
                pinned=True,
                pinnedBy={"_id": "u2", "username": "ben"},
            ),
            message("m2", "GENERAL", ben, "A reply in the thread", 20, tmid="m1"),
            message("m3", "GENERAL", cleo, "Another reply, *edited*", 30, tmid="m1", editedAt=at(90)),
            message(
                "m4",
                "GENERAL",
                ben,
                "notes attached",
                40,
                file={"_id": upload_id, "name": "notes.txt", "type": "text/plain"},
            ),
            message("m5", "r2", ana, "core secrets", 50),
            message("m6", "r3", dov, "long ago", -5000),
            message("m7", "u1u2", ana, "hello ben", 60),
            message("m8", "grp", cleo, "hello both", 70),
            message("m9", "live", ana, "a visitor", 80),
        ],
        "rocketchat_uploads": [
            {
                "_id": upload_id,
                "name": "notes.txt",
                "size": len(NOTES),
                "type": "text/plain",
                "rid": "GENERAL",
                "userId": "u2",
                "store": "GridFS:Uploads",
                "uploadedAt": at(40),
            },
            {
                "_id": "gone",
                "name": "lost.png",
                "store": "FileSystem:Uploads",
                "rid": "GENERAL",
                "userId": "u2",
            },
        ],
        "rocketchat_uploads.files": [
            {"_id": upload_id, "length": len(NOTES), "chunkSize": CHUNK, "filename": upload_id}
        ],
        # Chunks out of order, as a dump may hold them.
        "rocketchat_uploads.chunks": list(
            reversed(
                [
                    {
                        "_id": f"c{n}",
                        "files_id": upload_id,
                        "n": n,
                        "data": NOTES[n * CHUNK : (n + 1) * CHUNK],
                    }
                    for n in range((len(NOTES) + CHUNK - 1) // CHUNK)
                ]
            )
        ),
        "rocketchat_custom_emoji": [{"_id": "e1", "name": "parrot", "aliases": [], "extension": "png"}],
        "custom_emoji.files": [
            {"_id": emoji_file, "length": len(PARROT), "chunkSize": 261120, "filename": "parrot.png"}
        ],
        "custom_emoji.chunks": [{"_id": "ec0", "files_id": emoji_file, "n": 0, "data": PARROT}],
    }


def export(root: Path) -> Path:
    folder = root / "dump" / "rocketchat"
    folder.mkdir(parents=True)
    for name, docs in collections().items():
        data = b"".join(bson.encode(doc) for doc in docs)
        if name == "rocketchat_message":
            data += bson.encode({"_id": "cut", "msg": "the dump was cut off here"})[:-7]
        (folder / f"{name}.bson").write_bytes(data)
        metadata = {"indexes": [], "uuid": "", "collectionName": name}
        (folder / f"{name}.metadata.json").write_bytes(orjson.dumps(metadata))
    tarball = root / "rocketchat-dump.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(root / "dump", arcname="dump")
    return tarball
