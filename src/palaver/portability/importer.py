"""Reading an archive into a server as a new realm, in one transaction, in batches.

Every table's imported rows get a fresh, contiguous ID range reserved up front (so the
mapping is an offset per table and references to tables imported later, such as the
realm's permission groups, can be mapped at once). References within a table (a bot's
owner, a group's permission groups) may point forward, so they are written by an UPDATE
once the table is in.
"""

from __future__ import annotations

import secrets
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import Connection, bindparam, func, select, update

from palaver.actions.realm import check_string_id
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import realm_email_host
from palaver.lib.storage import FileStorage, make_storage
from palaver.models import Realm
from palaver.portability.archive import (
    MANIFEST,
    ArchiveError,
    Progress,
    check_manifest,
    read_lines,
    row_decoder,
    table_member,
)
from palaver.portability.remap import MEMBERS_FIELD, IdMap, Row, transform_row
from palaver.portability.schema import SECRET_COLUMNS, SECRET_TABLES, TablePlan, exported_plans
from palaver.services import Services


@dataclass
class ImportResult:
    realm_id: int
    string_id: str
    manifest: dict[str, Any]
    seconds: float


def read_manifest(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as zf:
            return check_manifest(zf.read(MANIFEST))
    except KeyError:
        raise ArchiveError(f"{path} has no manifest.json: not a Palaver export") from None
    except zipfile.BadZipFile:
        raise ArchiveError(f"{path} is not a zip archive") from None


def import_realm(
    services: Services,
    path: Path,
    *,
    string_id: str | None = None,
    progress: TextIO | None = None,
    batch_size: int = 2_000,
    storage: FileStorage | None = None,
) -> ImportResult:
    started = time.monotonic()
    manifest = read_manifest(path)
    string_id = check_string_id(string_id if string_id is not None else manifest["realm"]["string_id"])
    plans = exported_plans()
    known = {p.name for p in plans}
    unknown = sorted(set(manifest["tables"]) - known)
    if unknown:
        raise ArchiveError(
            f"the archive has tables this Palaver does not know ({', '.join(unknown)}): upgrade first"
        )
    storage = storage if storage is not None else make_storage(services.settings)
    written: list[str] = []
    bar = Progress("import", sum(int(t["rows"]) for t in manifest["tables"].values()), progress)
    with zipfile.ZipFile(path) as zf, services.db.session() as session:
        try:
            with services.db.transaction(session):
                conn = session.connection()
                _refuse_existing(conn, string_id)
                deltas = _reserve_ids(conn, plans, manifest["tables"], services.settings.is_sqlite)
                new_host = realm_email_host(services.settings, Realm(string_id=string_id))
                ids = IdMap(deltas, (str(manifest["realm"].get("email_host", "")), new_host))
                for plan in plans:
                    if manifest["tables"].get(plan.name, {}).get("rows"):
                        _import_table(conn, zf, plan, ids, string_id, batch_size, bar)
                _import_uploads(zf, storage, ids, written)
                realm_id = ids.new("realm", int(manifest["realm"]["id"]))
        except BaseException:
            for key in written:  # the rows are gone with the rollback; so go their files
                storage.delete(key)
            raise
    bar.finish()
    return ImportResult(realm_id, string_id, manifest, time.monotonic() - started)


def _refuse_existing(conn: Connection, string_id: str) -> None:
    if conn.scalar(select(Realm.id).where(Realm.string_id == string_id)) is not None:
        raise ArchiveError(
            f"an organization with string ID {string_id!r} exists already (choose --string-id)"
        )


def _reserve_ids(
    conn: Connection, plans: list[TablePlan], tables: dict[str, dict[str, Any]], is_sqlite: bool
) -> dict[str, int]:
    """Per table, the offset from archived to new IDs, with the new range reserved."""
    deltas: dict[str, int] = {}
    for plan in plans:
        info = tables.get(plan.name) or {}
        if plan.own_id is None or not info.get("rows"):
            continue
        low, high = int(info["min_id"]), int(info["max_id"])
        column = plan.table.c[plan.own_id]
        start = int(conn.scalar(select(func.coalesce(func.max(column), 0))) or 0) + 1
        if not is_sqlite:
            # Move the sequence past the range, so concurrent inserts never take its IDs.
            sequence = conn.scalar(select(func.pg_get_serial_sequence(plan.name, plan.own_id)))
            if sequence:
                start = max(start, int(conn.scalar(select(func.nextval(sequence))) or 0))
                conn.execute(select(func.setval(sequence, start + high - low)))
        deltas[plan.name] = start - low
    return deltas


def _import_table(
    conn: Connection,
    zf: zipfile.ZipFile,
    plan: TablePlan,
    ids: IdMap,
    string_id: str,
    batch_size: int,
    bar: Progress,
) -> None:
    decode = row_decoder(plan.table)
    columns = set(plan.table.c.keys())
    self_refs = [c for c, target in plan.references.items() if target == plan.name]
    later: list[Row] = []
    batch: list[Row] = []
    with zf.open(table_member(plan.name)) as stream:
        for row in _rows(read_lines(stream), decode):
            transform_row(plan, row, ids)
            extra = set(row) - columns - {MEMBERS_FIELD}
            if extra:
                raise ArchiveError(f"table {plan.name} has unknown columns {sorted(extra)}: upgrade first")
            if plan.name == "realm":
                row["string_id"] = string_id
            if self_refs and any(row[c] is not None for c in self_refs):
                later.append({"_key": row[plan.own_id or ""], **{c: row[c] for c in self_refs}})
                row.update({c: None for c in self_refs})
            batch.append(row)
            if len(batch) >= batch_size:
                _insert(conn, plan, batch)
                bar.advance(len(batch), plan.name)
                batch = []
        if batch:
            _insert(conn, plan, batch)
            bar.advance(len(batch), plan.name)
    if later:
        key = plan.table.c[plan.own_id or ""]
        statement = update(plan.table).where(key == bindparam("_key"))
        conn.execute(statement.values({c: bindparam(c) for c in self_refs}), later)


def _rows(lines: Iterator[bytes], decode: Any) -> Iterator[Row]:
    for line in lines:
        yield decode(line)


def _new_secret(column: str) -> str:
    # API keys have their own alphabet and length; the other tokens are 32 hex digits.
    return generate_api_key() if column == "api_key" else secrets.token_hex(16)


def _taken(conn: Connection, plan: TablePlan, column: str, rows: list[Row]) -> set[str]:
    values = [r[column] for r in rows if r[column]]
    if not values:
        return set()
    c = plan.table.c[column]
    return set(conn.scalars(select(c).where(c.in_(values))))


def _insert(conn: Connection, plan: TablePlan, rows: list[Row]) -> None:
    # Credentials are unique server-wide: missing ones (an export without secrets) and those
    # a copy imported next to its original would share are made afresh.
    for table, column in SECRET_COLUMNS:
        if table == plan.name:
            taken = _taken(conn, plan, column, rows)
            for row in rows:
                if not row[column] or row[column] in taken:
                    row[column] = _new_secret(column)
    unique = SECRET_TABLES.get(plan.name)
    if unique is not None:
        taken = _taken(conn, plan, unique, rows)
        rows = [r for r in rows if r[unique] not in taken]
        if not rows:
            return
    conn.execute(plan.table.insert(), rows)


def _import_uploads(zf: zipfile.ZipFile, storage: FileStorage, ids: IdMap, written: list[str]) -> None:
    for info in zf.infolist():
        if not info.filename.startswith("uploads/") or info.is_dir():
            continue
        key = new_storage_key(info.filename.removeprefix("uploads/"), ids)
        storage.save(key, zf.read(info))
        written.append(key)


def new_storage_key(key: str, ids: IdMap) -> str:
    """``<realm>/...`` keys move to the new realm; emoji images are named by emoji ID."""
    realm, _, rest = key.partition("/")
    if not realm.isdigit():
        raise ArchiveError(f"unexpected upload {key!r} in the archive")
    new_realm = ids.new("realm", int(realm))
    if rest.startswith("emoji/images/"):
        name = rest.removeprefix("emoji/images/")
        emoji_id, dot, ext = name.partition(".")
        if emoji_id.isdigit():
            rest = f"emoji/images/{ids.new('realm_emoji', int(emoji_id))}{dot}{ext}"
    return f"{new_realm}/{rest}"
