"""Migrations that rewrite existing data, run on a database made by the earlier ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from palaver.app import create_app
from palaver.migrate import upgrade
from tests.api.test_messages_send import send_dm
from tests.client import TestClient
from tests.helpers import Api, assert_json_success, seed_realm
from tests.sqlite_services import sqlite_services

REBUILD = "0019_message_ids_never_reused"
BEFORE_REBUILD = ("0007_message_search", "0018_archived_submessage")


def _as_before_0019(path: Path) -> None:
    """Give ``message`` back the schema it had before 0019, rows, indexes and triggers kept."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (create,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'message'").fetchone()
        dependents = [
            sql
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'message' AND type IN ('index', 'trigger')"
            )
        ]
        old = create.replace(" PRIMARY KEY AUTOINCREMENT", "").replace(
            "sending_client VARCHAR(30) NOT NULL, ",
            "sending_client VARCHAR(30) NOT NULL, CONSTRAINT pk_message PRIMARY KEY (id), ",
        )
        assert old.count("pk_message") == 1, create
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN")
        conn.execute(old.replace('CREATE TABLE "message"', "CREATE TABLE message_old", 1))
        conn.execute("INSERT INTO message_old SELECT * FROM message")
        conn.execute("DROP TABLE message")
        conn.execute("ALTER TABLE message_old RENAME TO message")
        for sql in dependents:
            conn.execute(sql)
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'message'")
        conn.execute("DELETE FROM alembic_version WHERE version_num = ?", (REBUILD,))
        conn.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in BEFORE_REBUILD])
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_0019_keeps_every_row_and_stops_id_reuse(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        realm = seed_realm(services)
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            kept = [send_dm(api, realm.iago, [realm.othello], f"kept {word}") for word in ("alpha", "beta")]
            deleted = send_dm(api, realm.iago, [realm.othello], "deleted gamma")
            assert_json_success(api.delete(realm.iago, f"messages/{deleted}"))
        services.db.engine.dispose()
        _as_before_0019(path)
        conn = sqlite3.connect(path)
        rows_before = conn.execute("SELECT count(*) FROM user_message").fetchone()
        assert (
            "AUTOINCREMENT"
            not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'message'").fetchone()[0]
        )
        conn.close()

        upgrade(services.db.engine)

        conn = sqlite3.connect(path)
        try:
            assert (
                "AUTOINCREMENT"
                in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'message'").fetchone()[0]
            )
            assert [r for (r,) in conn.execute("SELECT id FROM message ORDER BY id")] == kept
            assert conn.execute("SELECT count(*) FROM user_message").fetchone() == rows_before
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
            # The search index and its triggers are back.
            assert conn.execute(
                "SELECT rowid FROM message_fts WHERE message_fts MATCH 'beta'"
            ).fetchall() == [(kept[1],)]
            triggers = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
            assert {"message_fts_insert", "message_fts_delete", "message_fts_update"} <= triggers
        finally:
            conn.close()
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            # The message deleted before the upgrade left no trace; from now on none is reused.
            assert_json_success(api.delete(realm.iago, f"messages/{kept[1]}"))
            assert send_dm(api, realm.iago, [realm.othello], "next") > kept[1]
