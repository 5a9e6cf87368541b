"""Importing a Slack, Mattermost or Rocket.Chat history holds a batch of messages at a time:
the peak of traced memory at four times the history stays where it was. Every message
starts a thread, the case where a reader that remembered its threads in memory (each
thread's topic, kept for its later replies) grew fastest. So also for direct messages that
each start a conversation and carry a file, and for the dry run, which counts topics."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import bson
import orjson
import pytest

from palaver.importers.bundle import Bundle
from palaver.importers.dry_run import dry_run
from palaver.importers.fetch import Downloader
from palaver.importers.read import read_export
from palaver.importers.writer import write_organization
from tests.importers.traced import traced_peak
from tests.portability.conftest import Server

# Thousands of conversations and files imported under tracemalloc, three times: 90 s of
# CPU alone, and several times that beside the rest of the suite on two cores, which
# passed the suite's 600 s per test (the worker was ended as "crashed").
pytestmark = pytest.mark.timeout(1800)

START = 1_704_189_600  # 2024-01-02 10:00 UTC
PER_DAY = 200
PEOPLE = ("a", "b", "c")


def _at(n: int) -> int:
    """Message ``n``'s time: PER_DAY messages a day, a minute apart."""
    return START + n // PER_DAY * 86_400 + n % PER_DAY * 60


def _slack(root: Path, messages: int) -> None:
    members = [f"U{p}" for p in PEOPLE]
    users = [
        {"id": f"U{p}", "name": p, "profile": {"email": f"{p}@example.com"}, "is_owner": n == 0}
        for n, p in enumerate(PEOPLE)
    ]
    (root / "users.json").write_bytes(orjson.dumps(users))
    (root / "channels.json").write_bytes(orjson.dumps([{"id": "C1", "name": "general", "members": members}]))
    (root / "general").mkdir()
    for first in range(0, messages, PER_DAY):
        day = [
            {
                "type": "message",
                "user": members[n % 3],
                "text": f"message {n} about the release",
                "ts": f"{_at(n)}.000100",
                "thread_ts": f"{_at(n)}.000100",
            }
            for n in range(first, min(first + PER_DAY, messages))
        ]
        date = datetime.fromtimestamp(_at(first), tz=UTC)
        (root / "general" / f"{date:%Y-%m-%d}.json").write_bytes(orjson.dumps(day))


def _mattermost(root: Path, messages: int) -> None:
    lines: list[dict[str, object]] = [
        {"type": "version", "version": 1},
        {"type": "team", "team": {"name": "t", "display_name": "T", "type": "O"}},
        {
            "type": "channel",
            "channel": {"team": "t", "name": "general", "display_name": "General", "type": "O"},
        },
    ]
    for n, p in enumerate(PEOPLE):
        roles = "system_admin system_user" if n == 0 else "system_user"
        teams = [{"name": "t", "roles": "team_user", "channels": [{"name": "general"}]}]
        lines.append(
            {
                "type": "user",
                "user": {"username": p, "email": f"{p}@example.com", "roles": roles, "teams": teams},
            }
        )
    for n in range(0, messages, 2):
        at = _at(n) * 1000
        post = {
            "team": "t",
            "channel": "general",
            "user": PEOPLE[n % 3],
            "message": f"post {n}",
            "create_at": at,
        }
        post["replies"] = [{"user": PEOPLE[(n + 1) % 3], "message": f"reply {n}", "create_at": at + 1}]
        lines.append({"type": "post", "post": post})
    (root / "import.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def _rocketchat(root: Path, messages: int) -> None:
    db = root / "rocketchat"
    db.mkdir()
    users = [
        {
            "_id": f"u{p}",
            "username": p,
            "name": f"Person {p}",
            "roles": ["admin", "user"] if n == 0 else ["user"],
        }
        for n, p in enumerate(PEOPLE)
    ]
    (db / "users.bson").write_bytes(b"".join(bson.encode(u) for u in users))
    (db / "rocketchat_room.bson").write_bytes(bson.encode({"_id": "r1", "t": "c", "name": "general"}))
    subscriptions = [{"rid": "r1", "u": {"_id": u["_id"], "username": u["username"]}} for u in users]
    (db / "rocketchat_subscription.bson").write_bytes(b"".join(bson.encode(s) for s in subscriptions))
    with (db / "rocketchat_message.bson").open("wb") as out:
        for n in range(messages):
            sender = users[n % 3]
            doc = {
                "_id": f"m{n}",
                "rid": "r1",
                "u": {"_id": sender["_id"], "username": sender["username"]},
                "msg": f"message {n} about the release",
                "ts": datetime.fromtimestamp(_at(n), tz=UTC),
                "tcount": 1,
            }
            out.write(bson.encode(doc))


CROWD = tuple(f"p{n:02d}" for n in range(30))  # 4,060 groups of three: one per direct message


def _mattermost_direct(root: Path, messages: int) -> None:
    """Direct messages, each in a conversation of its own and with a file of its own."""
    lines: list[dict[str, object]] = [
        {"type": "version", "version": 1},
        {"type": "team", "team": {"name": "t", "display_name": "T", "type": "O"}},
    ]
    for n, p in enumerate(CROWD):
        roles = "system_admin system_user" if n == 0 else "system_user"
        lines.append(
            {
                "type": "user",
                "user": {"username": p, "email": f"{p}@example.com", "roles": roles, "teams": []},
            }
        )
    groups = itertools.combinations(CROWD, 3)
    (root / "data").mkdir()
    for n, members in zip(range(messages), groups, strict=False):
        path = f"data/f{n}.txt"
        (root / path).write_bytes(b"notes")
        post = {
            "channel_members": list(members),
            "user": members[0],
            "message": f"direct {n}",
            "create_at": _at(n) * 1000,
            "attachments": [{"path": path}],
        }
        lines.append({"type": "direct_post", "direct_post": post})
    (root / "import.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


WRITERS: dict[str, Callable[[Path, int], None]] = {
    "slack": _slack,
    "mattermost": _mattermost,
    "rocketchat": _rocketchat,
    "mattermost-direct": _mattermost_direct,
}


def _source(label: str) -> str:
    return label.removesuffix("-direct")


def _peak(server: Server | None, source: str, root: Path, string_id: str) -> tuple[int, int]:
    """(peak traced bytes above the start, messages imported) of reading and writing it, or
    of its dry run without a server."""
    with Bundle(root) as bundle:
        read = read_export(source, bundle, Downloader(token=None, base_url=None))
        with traced_peak() as peak:
            if server is None:
                summary = dry_run(read)
            else:
                summary = write_organization(server.services, read, string_id=string_id, batch_size=100)
            return peak(), summary.messages


@pytest.mark.parametrize("kind", sorted(WRITERS))
@pytest.mark.parametrize("dry", [False, True], ids=["import", "dry-run"])
def test_memory_does_not_grow_with_the_history(
    kind: str, dry: bool, tmp_path: Path, fresh_server: Callable[[str], Server]
) -> None:
    server = None if dry else fresh_server("target")
    source = _source(kind)
    small, large = 1_000, 4_000
    exports = {}
    for label, size in (("warm", small), ("small", small), ("large", large)):
        exports[label] = tmp_path / label
        exports[label].mkdir()
        WRITERS[kind](exports[label], size)
    # The first import fills what every one shares (compiled statements, the renderer's caches).
    _peak(server, source, exports["warm"], "warm")
    peak_small, count = _peak(server, source, exports["small"], "small")
    assert count == small
    peak_large, count = _peak(server, source, exports["large"], "large")
    assert count == large
    # Four times the threads (or conversations and files, or topics counted): a thread's
    # topic, a conversation's recipient or a file's link remembered in memory (100-200 bytes
    # each) adds 300-600 KB; a batch at a time keeps the peak where it was. The bound is per
    # extra message, not a ratio: what other threads of the test process allocate meanwhile
    # moves either peak by up to ~200 KB, a ratio of a 35 KB dry run's peak by far more.
    assert peak_large - peak_small < 100 * (large - small), (peak_small, peak_large)
