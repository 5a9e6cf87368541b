"""Migrations that rewrite existing data, run on a database made by the earlier ones."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path
from typing import Any

from alembic import command

from palaver.app import create_app
from palaver.migrate import alembic_config, upgrade
from palaver.models import Base
from palaver.models.names import name_key
from tests.api.test_messages_send import send_dm
from tests.client import TestClient
from tests.helpers import Api, assert_json_success, seed_realm
from tests.sqlite_services import sqlite_services

REBUILD = "0019_message_ids_never_reused"
BEFORE_REBUILD = ("0007_message_search", "0018_archived_submessage")
IDS_NEVER_REUSED = importlib.import_module("palaver.migrations.versions.0020_ids_never_reused")


def _heads_before(revision: str, *extra: str) -> list[str]:
    """The heads a database had before 0020 (and ``revision`` itself, when 0019) ran."""
    heads = [r for r in IDS_NEVER_REUSED.down_revision if r != revision]
    return heads + list(extra)


def _strip_autoincrement(conn: sqlite3.Connection, table: str) -> None:
    """Give ``table`` back the schema it had before AUTOINCREMENT, rows, indexes and triggers kept."""
    (create,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    dependents = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL",
            (table,),
        )
    ]
    old = create.replace(" PRIMARY KEY AUTOINCREMENT", "")
    key = f"CONSTRAINT pk_{table} PRIMARY KEY (id)"
    at = old.find("CONSTRAINT ")
    old = old[:at] + key + ", " + old[at:] if at >= 0 else old[: old.rindex(")")] + f", {key})"
    assert old.count(f"pk_{table}") == 1, create
    conn.execute(old.replace(f'CREATE TABLE "{table}"', f"CREATE TABLE {table}_old", 1))
    conn.execute(f"INSERT INTO {table}_old SELECT * FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {table}_old RENAME TO {table}")
    for sql in dependents:
        conn.execute(sql)
    conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))


def _as_before(path: Path, tables: tuple[str, ...], heads: list[str]) -> None:
    """The database as it was before the migration that gave ``tables`` AUTOINCREMENT."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN")
        for table in tables:
            _strip_autoincrement(conn, table)
        conn.execute("DELETE FROM alembic_version")
        conn.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in heads])
        conn.execute("COMMIT")
    finally:
        conn.close()


def _schema(path: Path, table: str) -> str:
    conn = sqlite3.connect(path)
    try:
        sql: str = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        return sql
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
        _as_before(path, ("message",), _heads_before(REBUILD, *BEFORE_REBUILD))
        conn = sqlite3.connect(path)
        rows_before = conn.execute("SELECT count(*) FROM user_message").fetchone()
        conn.close()
        assert "AUTOINCREMENT" not in _schema(path, "message")

        # Up to the newest revision these tests know: the later ones are already in.
        upgrade(services.db.engine, IDS_NEVER_REUSED.revision)

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


def test_0020_keeps_every_row_and_stops_id_reuse(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    tables: tuple[str, ...] = IDS_NEVER_REUSED.TABLES
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        realm = seed_realm(services)
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            draft = {"type": "private", "to": [], "topic": "", "content": "x"}
            drafts = assert_json_success(api.post(realm.hamlet, "drafts", {"drafts": [draft, draft]}))["ids"]
            assert_json_success(
                api.post(
                    realm.iago,
                    "realm/filters",
                    {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://x/{id}"},
                )
            )
        services.db.engine.dispose()
        conn = sqlite3.connect(path)
        counts = {t: conn.execute(f"SELECT count(*), max(id) FROM {t}").fetchone() for t in tables}
        conn.close()
        _as_before(path, tables, list(IDS_NEVER_REUSED.down_revision))
        assert not any("AUTOINCREMENT" in _schema(path, t) for t in tables)

        upgrade(services.db.engine, IDS_NEVER_REUSED.revision)

        conn = sqlite3.connect(path)
        try:
            for table in tables:
                assert "AUTOINCREMENT" in _schema(path, table), table
                assert conn.execute(f"SELECT count(*), max(id) FROM {table}").fetchone() == counts[table]
            sequences = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
            assert sequences["draft"] == max(drafts)
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            conn.close()
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            assert_json_success(api.delete(realm.hamlet, f"drafts/{max(drafts)}"))
            [following] = assert_json_success(api.post(realm.hamlet, "drafts", {"drafts": [draft]}))["ids"]
            assert following > max(drafts)


def test_the_models_flag_the_tables_the_migrations_rebuilt() -> None:
    """A table made fresh from the models never reuses IDs exactly where a migrated one does."""
    flagged = {
        name for name, table in Base.metadata.tables.items() if table.kwargs.get("sqlite_autoincrement")
    }
    # The change log is made with AUTOINCREMENT by its own migration (0030).
    assert flagged == {"message", *IDS_NEVER_REUSED.TABLES, "change_log"}


def test_0030_the_change_log_never_reuses_ids(tmp_path: Path) -> None:
    """A follower's position is an ID: deleting every row must not hand one out again."""
    path = tmp_path / "palaver.db"
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        assert "AUTOINCREMENT" in _schema(path, "change_log")


def _indexes(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM pragma_index_list('subscription')")]
        return {n: [c for (c,) in conn.execute("SELECT name FROM pragma_index_info(?)", (n,))] for n in names}
    finally:
        conn.close()


def test_0021_reads_a_channels_subscribers_from_the_index_alone(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine, IDS_NEVER_REUSED.revision)
        assert _indexes(path)["ix_subscription_recipient_active"] == ["recipient_id", "active"]
        upgrade(services.db.engine)
        indexes = _indexes(path)
        assert "ix_subscription_recipient_active" not in indexes
        assert indexes["ix_subscription_recipient_active_user"] == [
            "recipient_id",
            "active",
            "user_profile_id",
        ]
        with services.db.engine.connect() as conn:
            plan = " ".join(
                str(row[-1])
                for row in conn.exec_driver_sql(
                    "EXPLAIN QUERY PLAN"
                    " SELECT user_profile_id FROM subscription WHERE recipient_id = 1 AND active"
                )
            )
        assert "COVERING INDEX ix_subscription_recipient_active_user" in plan


def _downgrade(services: Any, revision: str) -> None:
    config = alembic_config()
    with services.db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


OLD_LOWER_COLLISIONS = ("Ärger", "ärger", "Straße", "STRASSE")
OLD_EXACT_COLLISIONS = ("Ärger", "ärger", "ABC", "abc")
RENAMED = {
    "stream": ["Ärger", "ärger (2)", "Straße", "STRASSE (2)"],
    "channel_folder": ["Ärger", "ärger (2)", "Straße", "STRASSE (2)"],
    "user_group": ["Ärger", "ärger (2)", "ABC", "abc (2)"],
}


def test_0023_keys_every_name_and_renames_the_later_of_colliding_ones(tmp_path: Path) -> None:
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        realm = seed_realm(services, default_channels=True)
        _downgrade(services, "0022_sign_in_providers")
        with services.db.engine.begin() as conn:
            (stream_id,) = conn.exec_driver_sql(
                "SELECT min(id) FROM stream WHERE realm_id = ?", (realm.id,)
            ).one()
            columns = [
                str(row[1]) for row in conn.exec_driver_sql("PRAGMA table_info(stream)") if row[1] != "id"
            ]
            copied = ", ".join("?" if c == "name" else c for c in columns)
            # lower() is ASCII-only on SQLite and ß is no ss to it: the old indexes let these
            # coexist; user groups were unique by the exact name.
            for name in OLD_LOWER_COLLISIONS:
                conn.exec_driver_sql(
                    f"INSERT INTO stream ({', '.join(columns)}) SELECT {copied} FROM stream WHERE id = ?",
                    (name, stream_id),
                )
                conn.exec_driver_sql(
                    "INSERT INTO channel_folder (realm_id, name, description, rendered_description,"
                    " date_created, is_archived, \"order\") VALUES (?, ?, '', '', '2026-01-01', 0, 0)",
                    (realm.id, name),
                )
            for name in OLD_EXACT_COLLISIONS:
                conn.exec_driver_sql(
                    "INSERT INTO user_group (realm_id, name, description, is_system_group, deactivated)"
                    " VALUES (?, ?, '', 0, 0)",
                    (realm.id, name),
                )
        upgrade(services.db.engine)
        with services.db.engine.connect() as conn:
            for table, expected in RENAMED.items():
                rows = conn.exec_driver_sql(
                    f"SELECT name, name_key FROM {table} WHERE realm_id = ? AND name IS NOT NULL ORDER BY id",
                    (realm.id,),
                ).all()
                assert all(key == name_key(name) for name, key in rows), rows
                assert [name for name, _ in rows][-4:] == expected
            indexes = {
                str(n) for (n,) in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'")
            }
        assert {"uq_stream_realm_name_key", "uq_channel_folder_realm_name_key"} <= indexes
        assert not {"uq_stream_realm_name", "uq_channel_folder_realm_name"} & indexes


def test_0029_stored_table_alignment_becomes_a_class(tmp_path: Path) -> None:
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        realm = seed_realm(services)
        table = "| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |"
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            message_id = send_dm(api, realm.iago, [realm.othello], table)
            edited = api.patch(realm.iago, f"messages/{message_id}", {"content": table + "\n\nedited"})
            assert_json_success(edited)
        _downgrade(services, "0028_passkeys")

        def stored() -> tuple[str, str]:
            with services.db.engine.connect() as conn:
                row = conn.exec_driver_sql(
                    "SELECT rendered_content, edit_history FROM message WHERE id = ?", (message_id,)
                ).one()
            return str(row[0]), str(row[1])

        html, history = stored()
        # As the renderer wrote it before: inline styles, in the HTML and in the history's JSON.
        assert html.count(' style="text-align:') == 6 and "text-align-" not in html
        assert ' style=\\"text-align:left\\"' in history and "text-align-" not in history
        upgrade(services.db.engine)
        html, history = stored()
        assert "style=" not in html and "style=" not in history
        for side in ("left", "center", "right"):
            assert html.count(f' class="text-align-{side}"') == 2
            assert f' class=\\"text-align-{side}\\"' in history
