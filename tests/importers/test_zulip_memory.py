"""Reading a Zulip export holds one message file at a time: memory does not grow with the
history, though realm.json holds every reaction and attachment.json every file link. So
also for a history of direct messages each in a conversation of its own (its recipient,
huddle and subscriptions in realm.json) with a file of its own, read and imported, or read
by the dry run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaver.importers.bundle import Bundle
from palaver.importers.dry_run import dry_run
from palaver.importers.writer import write_organization
from palaver.importers.zulip import read_zulip
from tests.importers.traced import traced_peak
from tests.importers.zulip_export import T0, personal_recipient
from tests.portability.conftest import Server

# Thousands of conversations and files imported under tracemalloc, three times: 90 s of
# CPU alone, and several times that beside the rest of the suite on two cores, which
# passed the suite's 600 s per test (the worker was ended as "crashed").
pytestmark = pytest.mark.timeout(1800)

PER_FILE = 1000
PEOPLE = (5, 6, 7)
CHANNEL_RECIPIENT = 120


def _write(root: Path, messages: int) -> Path:
    """An export of ``messages`` channel messages, each with two reactions, three readers
    and, every tenth, a linked file."""
    root.mkdir()
    reactions, attachments = [], []
    for mid in range(1, messages + 1):
        for n, user in enumerate(PEOPLE[:2]):
            reactions.append(
                {
                    "id": 2 * mid + n,
                    "user_profile": user,
                    "message": mid,
                    "emoji_name": "thumbs_up" if n else "heart",
                    "emoji_code": "1f44d" if n else "2764",
                    "reaction_type": "unicode_emoji",
                }
            )
        if mid % 10 == 0:
            path_id = f"2/ab/{mid:08d}/notes-{mid}.txt"
            attachments.append(
                {"id": mid, "owner": 5, "path_id": path_id, "file_name": "n.txt", "messages": [mid]}
            )
            (root / "uploads" / path_id).parent.mkdir(parents=True, exist_ok=True)
            (root / "uploads" / path_id).write_bytes(b"notes")
    users = [
        {"id": u, "email": f"u{u}@zulip.test", "full_name": f"Person {u}", "role": 400, "is_active": True}
        for u in PEOPLE
    ]
    tables = {
        "zerver_realm": [{"id": 2, "string_id": "big", "name": "Big"}],
        "zerver_userprofile": users,
        "zerver_stream": [{"id": 20, "name": "general", "recipient": CHANNEL_RECIPIENT}],
        "zerver_recipient": [{"id": CHANNEL_RECIPIENT, "type": 2, "type_id": 20}]
        + [{"id": personal_recipient(u), "type": 1, "type_id": u} for u in PEOPLE],
        "zerver_subscription": [
            {"id": u, "user_profile": u, "recipient": CHANNEL_RECIPIENT, "active": True} for u in PEOPLE
        ],
        "zerver_reaction": reactions,
    }
    return _write_export(
        root,
        tables,
        attachments,
        messages,
        lambda mid: {
            "sender": PEOPLE[mid % 3],
            "recipient": CHANNEL_RECIPIENT,
            "subject": f"topic {mid // 50}",
            "content": f"message number {mid} about the release",
        },
        lambda mid: PEOPLE,
        flags_mask=1,
    )


def _write_export(
    root: Path,
    tables: dict[str, Any],
    attachments: list[dict[str, Any]],
    messages: int,
    message: Callable[[int], dict[str, Any]],
    readers: Callable[[int], Sequence[int]],
    *,
    flags_mask: int,
) -> Path:
    """realm.json, attachment.json and the messages 1 to ``messages``, PER_FILE to a file:
    each message's row is ``message(id)``, sent at T0 + id, with a UserMessage row of
    ``flags_mask`` for each of ``readers(id)``."""
    (root / "realm.json").write_bytes(orjson.dumps(tables))
    (root / "attachment.json").write_bytes(orjson.dumps({"zerver_attachment": attachments}))
    for number, first in enumerate(range(1, messages + 1, PER_FILE), 1):
        ids = range(first, min(first + PER_FILE, messages + 1))
        rows = [{"id": mid, **message(mid), "date_sent": T0 + mid} for mid in ids]
        flags = [
            {"id": 3 * mid + n, "user_profile": u, "message": mid, "flags_mask": flags_mask}
            for mid in ids
            for n, u in enumerate(readers(mid))
        ]
        (root / f"messages-{number:06d}.json").write_bytes(
            orjson.dumps({"zerver_message": rows, "zerver_usermessage": flags})
        )
    return root


def _peak_while_reading(root: Path) -> tuple[int, int, int]:
    """(peak traced bytes, messages, reactions) while every message is read and dropped."""
    with traced_peak() as peak, Bundle(root) as bundle:
        source = read_zulip(bundle)
        count = reactions = 0
        for message in source.messages():
            count += 1
            reactions += len(message.reactions)
        return peak(), count, reactions


def test_memory_does_not_grow_with_the_history(tmp_path: Path) -> None:
    small, large = 2 * PER_FILE, 8 * PER_FILE
    peak_small, count, reactions = _peak_while_reading(_write(tmp_path / "small", small))
    assert (count, reactions) == (small, 2 * small)
    peak_large, count, reactions = _peak_while_reading(_write(tmp_path / "large", large))
    assert (count, reactions) == (large, 2 * large)
    # Four times the history, everything held in memory at once would be about four times
    # the peak; one message file at a time keeps it where it was.
    assert peak_large < peak_small * 1.25, (peak_small, peak_large)


def test_every_reaction_and_file_reaches_its_message(tmp_path: Path) -> None:
    root = _write(tmp_path / "export", 3 * PER_FILE + 17)
    with Bundle(root) as bundle:
        by_id = {}
        for message in read_zulip(bundle).messages():
            by_id[int(message.content.split()[2])] = message
    assert len(by_id) == 3 * PER_FILE + 17
    assert all(sorted(r.emoji_name for r in m.reactions) == ["heart", "thumbs_up"] for m in by_id.values())
    assert {mid for mid, m in by_id.items() if m.files} == set(range(10, 3 * PER_FILE + 17, 10))
    assert by_id[2010].files[0].load() == b"notes" and by_id[2010].user_flags == {"5": 1, "6": 1, "7": 1}


CROWD = tuple(range(100, 130))  # 4,060 groups of three: one per direct message
FIRST_CONVERSATION = 10_000  # the recipient IDs of the conversations


def _write_direct(root: Path, messages: int) -> Path:
    """An export of ``messages`` direct messages, each to a group of three of its own (a
    huddle, its recipient and three subscriptions) and with a file of its own."""
    root.mkdir()
    groups = list(itertools.islice(itertools.combinations(CROWD, 3), messages))
    assert len(groups) == messages
    users = [
        {
            "id": u,
            "email": f"u{u}@zulip.test",
            "full_name": f"Person {u}",
            "role": 100 if u == CROWD[0] else 400,
        }
        for u in CROWD
    ]
    recipients = [{"id": personal_recipient(u), "type": 1, "type_id": u} for u in CROWD]
    subscriptions = [
        {"id": u, "user_profile": u, "recipient": personal_recipient(u), "active": True} for u in CROWD
    ]
    huddles, attachments = [], []
    for n, members in enumerate(groups, 1):
        recipient = FIRST_CONVERSATION + n
        huddles.append({"id": n, "huddle_hash": f"{n:040d}", "group_size": 3, "recipient": recipient})
        recipients.append({"id": recipient, "type": 3, "type_id": n})
        subscriptions += [
            {"id": len(subscriptions) + 1 + k, "user_profile": u, "recipient": recipient, "active": True}
            for k, u in enumerate(members)
        ]
        path_id = f"2/ab/{n:08d}/notes-{n}.txt"
        attachments.append(
            {"id": n, "owner": members[0], "path_id": path_id, "file_name": "n.txt", "messages": [n]}
        )
        (root / "uploads" / path_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "uploads" / path_id).write_bytes(b"notes")
    tables: dict[str, Any] = {
        "zerver_realm": [{"id": 2, "string_id": "direct", "name": "Direct"}],
        "zerver_userprofile": users,
        "zerver_stream": [],
        "zerver_recipient": recipients,
        "zerver_subscription": subscriptions,
        "zerver_huddle": huddles,
    }
    return _write_export(
        root,
        tables,
        attachments,
        messages,
        lambda mid: {
            "sender": groups[mid - 1][0],
            "recipient": FIRST_CONVERSATION + mid,
            "subject": "",
            "content": f"direct {mid} with [notes](/user_uploads/2/ab/{mid:08d}/notes-{mid}.txt)",
        },
        lambda mid: groups[mid - 1],
        flags_mask=1 | 256,
    )


def _peak_direct(server: Server | None, root: Path, string_id: str) -> tuple[int, int, int]:
    """(peak traced bytes above the start, messages, files) of importing the export, or of
    reading it for the dry run without a server; the dry run's includes the reader's own
    tables (realm.json's conversations), the import's the messages read and written, as
    for the other sources."""
    with Bundle(root) as bundle:
        source = None if server is None else read_zulip(bundle)
        with traced_peak() as peak:
            if source is None:
                source = read_zulip(bundle)
            if server is None:
                summary = dry_run(source)
            else:
                summary = write_organization(server.services, source, string_id=string_id, batch_size=100)
            return peak(), summary.messages, summary.files


@pytest.mark.parametrize("dry", [False, True], ids=["import", "dry-run"])
def test_memory_does_not_grow_with_direct_conversations_and_their_files(
    dry: bool, tmp_path: Path, fresh_server: Callable[[str], Server]
) -> None:
    server = None if dry else fresh_server("target")
    small, large = 1_000, 4_000
    exports = {
        label: _write_direct(tmp_path / label, size)
        for label, size in (("warm", small), ("small", small), ("large", large))
    }
    # The first import fills what every one shares (compiled statements, the renderer's caches).
    _peak_direct(server, exports["warm"], "warm")
    peak_small, count, files = _peak_direct(server, exports["small"], "small")
    assert (count, files) == (small, small)
    peak_large, count, files = _peak_direct(server, exports["large"], "large")
    assert (count, files) == (large, large)
    # Four times the conversations and files: a conversation's recipient and members, or a
    # file's link, remembered in memory (100-300 bytes each) adds 300-900 KB; the bound is
    # per extra message, as for the other sources (tests/importers/test_import_memory.py).
    assert peak_large - peak_small < 100 * (large - small), (peak_small, peak_large)
