"""Topic names for a source's threads, remembered on disk rather than in memory.

A thread becomes the topic "YYYY-MM-DD <Source> thread N", N counting the channel's threads
started that day in the order they are first seen (Zulip's naming for Slack's threads). A
reply may come any time after its thread started, so every thread seen is remembered until
the import ends: a long history has hundreds of thousands of them. They are kept in a
private temporary SQLite database, which SQLite holds in its page cache (2 MiB) and spills
to a temporary file beyond that, so the reader's memory does not grow with the history.
The counters stay in memory: one per channel and day, not per message or thread.

``ScratchMap`` is the same mechanism for the writer's and the dry run's other lookups that
grow with the history (stored files, direct-message conversations, topics seen).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from types import TracebackType

# SQLite's own default, said here: beyond it, pages of the thread table go to the file.
_CACHE_KIB = 2048


def _scratch_database() -> sqlite3.Connection:
    """A private database in a temporary file, deleted when it is closed. It is scratch: no
    journal, no syncing, one transaction that is never committed."""
    db = sqlite3.connect("", isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
    db.execute("BEGIN")
    return db


class ScratchMap:
    """Text keys to (integer, text) values, on disk; ``close`` removes the database."""

    def __init__(self) -> None:
        self._db = _scratch_database()
        self._db.execute(
            "CREATE TABLE item (key TEXT PRIMARY KEY, number INTEGER, text TEXT NOT NULL) WITHOUT ROWID"
        )

    def get(self, key: str) -> tuple[int, str] | None:
        found = self._db.execute("SELECT number, text FROM item WHERE key = ?", (key,)).fetchone()
        return None if found is None else (int(found[0]), str(found[1]))

    def set(self, key: str, value: tuple[int, str]) -> None:
        self._db.execute("INSERT OR REPLACE INTO item VALUES (?, ?, ?)", (key, value[0], value[1]))

    def set_many(self, items: list[tuple[str, int]]) -> None:
        """``key -> (number, "")`` for each pair: one statement for a batch."""
        self._db.executemany("INSERT OR REPLACE INTO item VALUES (?, ?, '')", items)

    def add(self, key: str) -> None:
        """Remember ``key`` (a set's member), once however often it is added."""
        self._db.execute("INSERT OR IGNORE INTO item VALUES (?, 0, '')", (key,))

    def __iter__(self) -> Iterator[str]:
        """The keys, in no particular order."""
        return (str(row[0]) for row in self._db.execute("SELECT key FROM item"))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM item").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ScratchMap:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ThreadTopics:
    """Each thread's topic, by (channel key, thread key); ``close`` removes the database."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.counters: Counter[tuple[str, str]] = Counter()
        self._db = _scratch_database()
        self._db.execute(
            "CREATE TABLE thread (channel TEXT, thread TEXT, topic TEXT NOT NULL,"
            " PRIMARY KEY (channel, thread)) WITHOUT ROWID"
        )

    def topic(self, channel: str, thread: str, day: str) -> str:
        """The thread's topic: the one it got when first seen, else the next of ``day``'s."""
        found = self._db.execute(
            "SELECT topic FROM thread WHERE channel = ? AND thread = ?", (channel, thread)
        ).fetchone()
        if found is not None:
            return str(found[0])
        topic = self.new(channel, day)
        self._db.execute("INSERT INTO thread VALUES (?, ?, ?)", (channel, thread, topic))
        return topic

    def new(self, channel: str, day: str) -> str:
        """The next topic of the channel's threads of ``day``, for a thread seen only once
        (a post that carries its replies)."""
        self.counters[(channel, day)] += 1
        return f"{day} {self.source} thread {self.counters[(channel, day)]}"

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ThreadTopics:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
