"""The engines: the primary's (with SQLite's pragmas and its BEGIN), the cache loads' own, the
read replica's."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import ConnectionPoolEntry

from palaver.config import Settings
from palaver.models.base import use_postgresql_index_conditions

# Execution option of a connection that begins a write transaction (SQLite: BEGIN IMMEDIATE).
WRITE_OPTION = "palaver_write"

# How long SQLite itself lets a writer wait for another process's write lock.
SQLITE_BUSY_TIMEOUT_MS = 10_000
# Pooled SQLite connections kept open (see make_engine).
SQLITE_POOL_SIZE = 40
# SQLite: connections opened past the pool's size when every kept one is in use (a
# request's session plus the realm-state cache's own load connection). PostgreSQL: how
# many more than database_pool_size a process may open (and keeps); beyond, requests wait.
POOL_OVERFLOW = 8


def _sqlite_pragmas(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers proceed during a write; busy_timeout makes writers from several
    # threads or processes wait for the lock instead of failing at once.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    write = conn.get_execution_options().get(WRITE_OPTION, False)
    statement = "BEGIN IMMEDIATE" if write else "BEGIN"
    # On the driver's connection: through SQLAlchemy's execution path (an execution context,
    # its events, a result) BEGIN cost as much as a small query, and every request begins.
    try:
        conn.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
    except sqlite3.Error as error:
        # As SQLAlchemy would raise it ("database is locked" is an OperationalError: 503).
        raise DBAPIError.instance(statement, None, error, sqlite3.Error) from error


def make_engine(settings: Settings) -> Engine:
    if settings.is_sqlite:
        path = settings.database_url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            settings.database_url,
            connect_args={"check_same_thread": False},
            # As many kept connections as the worker threads that use them (anyio's default
            # limit is 40): with fewer, busy periods open and close overflow connections,
            # each paying for its PRAGMAs and a schema parse. Once the server is quiet the
            # idle ones are closed (~0.4 MiB each: workers/idle_memory.py).
            pool_size=SQLITE_POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        # Take BEGIN away from pysqlite: a write transaction must take the write lock at
        # its start (BEGIN IMMEDIATE), or two writers that both read first deadlock on
        # upgrade and one fails at once instead of waiting out busy_timeout.
        event.listen(engine, "connect", lambda conn, _rec: setattr(conn, "isolation_level", None))
        event.listen(engine, "begin", _sqlite_begin)
    else:
        engine = _postgresql_engine(settings.database_url, settings)
    return engine


def _postgresql_engine(url: str, settings: Settings) -> Engine:
    # Every connection the pool opens stays open: with an overflow, one returned while the
    # pool's kept share is full is closed, and the next one starts a PostgreSQL backend (a
    # fork and a catalog warm-up, ~10 ms of CPU). Load that hovers around the kept share
    # does that constantly: two workers with 16 senders each opened a backend per 14
    # messages (bench/workers.py). Past the limit, requests wait for a connection (two
    # cores gain nothing from more than ~18), and connections are opened only when
    # concurrent requests need them: PostgreSQL's max_connections is shared by every process.
    use_postgresql_index_conditions()
    return create_engine(
        url, pool_size=settings.database_pool_size + POOL_OVERFLOW, max_overflow=0, pool_pre_ping=True
    )


def make_load_engine(settings: Settings, engine: Engine) -> Engine:
    """The engine of realm-state cache loads, which take a connection while their request
    holds one. From the request pool, a burst of misses after an invalidation could take
    every connection and wait for one more forever (PostgreSQL's pool makes requests wait
    past its overflow); a small pool of their own cannot be held by requests. SQLite's pool
    has a connection per request thread and room beyond it: ``engine`` itself."""
    if settings.is_sqlite:
        return engine
    # Kept open for the same reason as the request pool's connections.
    return create_engine(settings.database_url, pool_size=8, max_overflow=0, pool_pre_ping=True)


def make_replica_engine(settings: Settings) -> Engine | None:
    """The read replica's engine, when one is configured (PostgreSQL only; see config.py)."""
    if not settings.database_replica_url:
        return None
    return _postgresql_engine(settings.database_replica_url, settings)
