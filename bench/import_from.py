"""Time and peak memory of ``palaver import-from slack`` and ``zulip`` for a long history.

Run: .venv/bin/python bench/import_from.py [--messages 1000000] [--database-url URL]

Writes a synthetic Slack export (10 channels, 50 people, one day file per channel per day
of about 200 messages; every tenth message starts or continues a thread, every fifth has a
reaction, some mention someone) into a temporary directory, imports it with ``palaver
import-from slack`` into an empty database (SQLite unless --database-url names a scratch
one), exports the result with ``palaver export --format zulip`` and imports that tarball
with ``palaver import-from zulip`` under another string ID. Each command runs as its own
process; its wall time and peak resident memory (``wait4``'s ru_maxrss) are printed.
"""

from __future__ import annotations

import argparse
import platform
import random
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from common import clean_environment, run_cli
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument(
        "--database-url", help="an empty scratch database (default: SQLite in a temporary directory)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-import-from-"))
    try:
        env = clean_environment(PALAVER_DATA_DIR=str(tmp / "data"), PALAVER_CREATE_DEMO_REALM="false")
        if args.database_url:
            env["PALAVER_DATABASE_URL"] = args.database_url
        run_cli(env, "migrate")
        export = tmp / "slack"
        export.mkdir()
        write_export(export, args.messages)
        size = sum(p.stat().st_size for p in export.rglob("*") if p.is_file())
        print(
            f"Python {platform.python_version()}, {args.messages:,} messages,"
            f" Slack export {size / 2**20:,.1f} MiB"
        )
        steps = [
            ("import-from slack", ("import-from", "slack", str(export), "--string-id", "bench")),
            ("export --format zulip", ("export", "bench", str(tmp / "zulip.tar.gz"), "--format", "zulip")),
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
