"""Time and peak memory of ``palaver import-from`` for a long history, per source.

Run: .venv/bin/python bench/import_from.py [--source slack|mattermost|rocketchat|zulip]
     [--messages 1000000] [--database-url URL]

Writes a synthetic export of the source's format into a temporary directory, all of the same
shape (10 channels, 50 people, about 200 messages per channel per day; every tenth message
starts a thread of three, every fifth has a reaction, every seventh mentions someone): a
Slack export (per-channel day files), a Mattermost bulk export (``import.jsonl``) or a
Rocket.Chat ``mongodump`` (``rocketchat_message.bson``...). It imports it with ``palaver
import-from SOURCE`` into an empty database (SQLite unless --database-url names a scratch
one). ``--source zulip`` imports a Slack export first, then exports the result with ``palaver
export --format zulip`` and imports that tarball with ``palaver import-from zulip`` under
another string ID. Each command runs as its own process; its wall time and peak resident
memory (``wait4``'s ru_maxrss) are printed.
"""

from __future__ import annotations

import argparse
import platform
import random
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bson
import orjson
from common import clean_environment, exit_on_sigterm, run_cli
from export_import import measured

CHANNELS = 10
PEOPLE = 50
PER_DAY = 200
WORDS = [
    "deploy",
    "server",
    "release",
    "bug",
    "meeting",
    "lunch",
    "review",
    "merge",
    "test",
    "build",
    "design",
    "docs",
    "question",
    "answer",
]


def write_export(root: Path, messages: int) -> None:
    rng = random.Random(7)
    users = [
        {
            "id": f"U{n:04d}",
            "name": f"user{n}",
            "real_name": f"Person {n}",
            "tz": "UTC",
            "profile": {"real_name": f"Person {n}", "email": f"user{n}@example.com"},
            "is_owner": n == 0,
        }
        for n in range(PEOPLE)
    ]
    (root / "users.json").write_bytes(orjson.dumps(users))
    channels = [
        {
            "id": f"C{c:03d}",
            "name": f"channel-{c}",
            "created": 1_600_000_000,
            "creator": "U0000",
            "members": [u["id"] for u in users],
            "topic": {"value": ""},
            "purpose": {"value": f"Channel {c}"},
        }
        for c in range(CHANNELS)
    ]
    (root / "channels.json").write_bytes(orjson.dumps(channels))
    start = datetime(2020, 1, 1, tzinfo=UTC)
    per_channel = messages // CHANNELS
    for channel in channels:
        folder = root / str(channel["name"])
        folder.mkdir()
        day_messages: list[dict[str, object]] = []
        thread = None
        for n in range(per_channel):
            day = start + timedelta(days=n // PER_DAY)
            ts = day.timestamp() + (n % PER_DAY) * 60 + rng.random()
            text = " ".join(rng.choices(WORDS, k=rng.randint(3, 14)))
            if n % 7 == 0:
                text = f"<@U{rng.randrange(PEOPLE):04d}> {text}"
            message: dict[str, object] = {
                "type": "message",
                "user": f"U{rng.randrange(PEOPLE):04d}",
                "text": text,
                "ts": f"{ts:.6f}",
            }
            if n % 10 == 0:
                thread = message["ts"]
            if n % 10 in (0, 1, 2) and thread is not None:
                message["thread_ts"] = thread
            if n % 5 == 0:
                message["reactions"] = [
                    {"name": "+1", "users": [f"U{rng.randrange(PEOPLE):04d}"], "count": 1}
                ]
            day_messages.append(message)
            if len(day_messages) == PER_DAY or n == per_channel - 1:
                (folder / f"{day:%Y-%m-%d}.json").write_bytes(orjson.dumps(day_messages))
                day_messages = []


def _thread_shape(
    rng: random.Random, per_channel: int
) -> Iterator[tuple[int, datetime, float, str, str, bool, int]]:
    """(n, day, timestamp, sender, text, reacted, thread position) for one channel's messages,
    the same for every source: position 0 starts a thread, 1 and 2 reply to it, -1 none."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    for n in range(per_channel):
        day = start + timedelta(days=n // PER_DAY)
        ts = day.timestamp() + (n % PER_DAY) * 60 + rng.random()
        text = " ".join(rng.choices(WORDS, k=rng.randint(3, 14)))
        mention = n % 7 == 0
        target = f"user{rng.randrange(PEOPLE)}" if mention else ""
        sender = f"user{rng.randrange(PEOPLE)}"
        if mention:
            text = f"@{target} {text}"
        yield n, day, ts, sender, text, n % 5 == 0, (n % 10 if n % 10 < 3 else -1)


def write_mattermost(root: Path, messages: int) -> None:
    """``import.jsonl`` of one team, with replies nested in their root post as mmctl writes them."""
    rng = random.Random(7)
    with (root / "import.jsonl").open("wb") as out:

        def line(kind: str, value: dict[str, object]) -> None:
            out.write(orjson.dumps({"type": kind, kind: value}) + b"\n")

        out.write(orjson.dumps({"type": "version", "version": 1}) + b"\n")
        line("team", {"name": "bench", "display_name": "Bench", "type": "O"})
        for c in range(CHANNELS):
            line(
                "channel",
                {"team": "bench", "name": f"channel-{c}", "display_name": f"channel-{c}", "type": "O"},
            )
        for n in range(PEOPLE):
            line(
                "user",
                {
                    "username": f"user{n}",
                    "email": f"user{n}@example.com",
                    "first_name": "Person",
                    "last_name": str(n),
                    "roles": "system_admin system_user" if n == 0 else "system_user",
                    "teams": [
                        {
                            "name": "bench",
                            "roles": "team_user",
                            "channels": [
                                {"name": f"channel-{c}", "roles": "channel_user"} for c in range(CHANNELS)
                            ],
                        }
                    ],
                },
            )
        per_channel = messages // CHANNELS
        for c in range(CHANNELS):
            post: dict[str, object] | None = None
            for _, _, ts, sender, text, reacted, position in _thread_shape(rng, per_channel):
                item: dict[str, object] = {"user": sender, "message": text, "create_at": int(ts * 1000)}
                if reacted:
                    item["reactions"] = [
                        {
                            "user": f"user{rng.randrange(PEOPLE)}",
                            "emoji_name": "+1",
                            "create_at": int(ts * 1000),
                        }
                    ]
                if position > 0 and post is not None:
                    replies = post.setdefault("replies", [])
                    assert isinstance(replies, list)
                    replies.append(item)
                    continue
                if post is not None:
                    line("post", post)
                post = {"team": "bench", "channel": f"channel-{c}", **item}
            if post is not None:
                line("post", post)


def write_rocketchat(root: Path, messages: int) -> None:
    """A ``mongodump`` folder: users, rooms, subscriptions and the messages, replies by ``tmid``."""
    rng = random.Random(7)
    db = root / "rocketchat"
    db.mkdir()
    with (db / "users.bson").open("wb") as out:
        for n in range(PEOPLE):
            out.write(
                bson.encode(
                    {
                        "_id": f"u{n}",
                        "username": f"user{n}",
                        "name": f"Person {n}",
                        "emails": [{"address": f"user{n}@example.com"}],
                        "roles": ["admin", "user"] if n == 0 else ["user"],
                        "active": True,
                    }
                )
            )
    with (db / "rocketchat_room.bson").open("wb") as out:
        for c in range(CHANNELS):
            out.write(bson.encode({"_id": f"r{c}", "t": "c", "name": f"channel-{c}"}))
    with (db / "rocketchat_subscription.bson").open("wb") as out:
        for c in range(CHANNELS):
            for n in range(PEOPLE):
                out.write(bson.encode({"rid": f"r{c}", "u": {"_id": f"u{n}", "username": f"user{n}"}}))
    per_channel = messages // CHANNELS
    with (db / "rocketchat_message.bson").open("wb") as out:
        for c in range(CHANNELS):
            root_id = None
            for n, _, ts, sender, text, reacted, position in _thread_shape(rng, per_channel):
                doc: dict[str, object] = {
                    "_id": f"m{c}-{n}",
                    "rid": f"r{c}",
                    "u": {"_id": f"u{sender[4:]}", "username": sender},
                    "msg": text,
                    "ts": datetime.fromtimestamp(ts, tz=UTC),
                }
                if position == 0:
                    root_id = doc["_id"]
                    doc["tcount"] = 2
                elif position > 0 and root_id is not None:
                    doc["tmid"] = root_id
                if reacted:
                    doc["reactions"] = {":+1:": {"usernames": [f"user{rng.randrange(PEOPLE)}"]}}
                out.write(bson.encode(doc))


WRITERS = {
    "slack": write_export,
    "zulip": write_export,
    "mattermost": write_mattermost,
    "rocketchat": write_rocketchat,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=sorted(WRITERS), default="slack")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument(
        "--database-url", help="an empty scratch database (default: SQLite in a temporary directory)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    exit_on_sigterm()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-import-from-"))
    try:
        env = clean_environment(PALAVER_DATA_DIR=str(tmp / "data"), PALAVER_CREATE_DEMO_REALM="false")
        if args.database_url:
            env["PALAVER_DATABASE_URL"] = args.database_url
        run_cli(env, "migrate")
        # The Zulip export is made by Palaver from an imported Slack export.
        first = "slack" if args.source == "zulip" else args.source
        export = tmp / first
        export.mkdir()
        WRITERS[args.source](export, args.messages)
        size = sum(p.stat().st_size for p in export.rglob("*") if p.is_file())
        print(
            f"Python {platform.python_version()}, {args.messages:,} messages,"
            f" {first} export {size / 2**20:,.1f} MiB"
        )
        steps = [(f"import-from {first}", ("import-from", first, str(export), "--string-id", "bench"))]
        if args.source == "zulip":
            steps += [
                (
                    "export --format zulip",
                    ("export", "bench", str(tmp / "zulip.tar.gz"), "--format", "zulip"),
                ),
                (
                    "import-from zulip",
                    ("import-from", "zulip", str(tmp / "zulip.tar.gz"), "--string-id", "bench2"),
                ),
            ]
        for label, command in steps:
            seconds, cpu, rss, out = measured(env, *command)
            rate = args.messages / seconds if seconds else 0
            print(
                f"{label}: {seconds:,.1f} s wall, {cpu:,.1f} s CPU, peak RSS {rss:,.0f} MiB,"
                f" {rate:,.0f} messages/s"
            )
            if label.startswith("import"):
                print("  " + next(line.strip() for line in out.splitlines() if "messages:" in line))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
