"""Writing one realm to an archive, table by table, in batches from one consistent snapshot."""

from __future__ import annotations

import os
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson
from sqlalchemy import Connection, LargeBinary, func, select

from palaver.lib.realm import realm_email_host
from palaver.lib.realm_emoji import emoji_storage_key
from palaver.lib.storage import FileStorage, make_storage
from palaver.models import Realm
from palaver.models.attachments import Attachment
from palaver.models.realm_emoji import RealmEmoji
from palaver.portability import FORMAT_VERSION
from palaver.portability.archive import (
    FORMAT_NAME,
    MANIFEST,
    Progress,
    encode_row,
    table_member,
    upload_member,
)
from palaver.portability.remap import MEMBERS_FIELD
from palaver.portability.schema import (
    SECRET_COLUMNS,
    SECRET_TABLES,
    Restrictions,
    TablePlan,
    direct_message_group_members,
    exported_plans,
    realm_rows,
    scoped_condition,
)
from palaver.services import Services
from palaver.timeutil import utcnow


@dataclass
class ExportResult:
    path: Path
    manifest: dict[str, Any]
    seconds: float

    @property
    def messages(self) -> int:
        return int(self.manifest["tables"].get("message", {}).get("rows", 0))


def export_realm(
    services: Services,
    realm_id: int,
    path: Path,
    *,
    progress: TextIO | None = None,
    batch_size: int = 5_000,
    storage: FileStorage | None = None,
    restrict: Restrictions | None = None,
    include_secrets: bool = False,
) -> ExportResult:
    """Write the realm's rows and files to ``path`` (replaced only once complete), readable
    by its owner only. Credentials (``schema.SECRET_COLUMNS`` and ``SECRET_TABLES``) are left
    out unless ``include_secrets``."""
    started = time.monotonic()
    storage = storage if storage is not None else make_storage(services.settings)
    partial = path.with_name(path.name + ".partial")
    engine = services.db.engine
    # One snapshot for every table, so the archive is consistent while the server runs.
    options: dict[str, Any] = {} if services.settings.is_sqlite else {"isolation_level": "REPEATABLE READ"}
    try:
        with engine.connect().execution_options(**options) as conn, conn.begin():
            realm = conn.execute(select(Realm.__table__).where(Realm.id == realm_id)).mappings().one()
            plans = [p for p in exported_plans() if include_secrets or p.name not in SECRET_TABLES]
            counts = {p.name: _count(conn, p, realm_id, restrict) for p in plans}
            bar = Progress("export", sum(counts.values()), progress)
            # Created 0600 before a byte is written: it holds every message and password hash.
            os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            os.chmod(partial, 0o600)
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=3) as zf:
                tables = {
                    str(p.name): _write_table(
                        conn, zf, p, realm_id, batch_size, bar, restrict, include_secrets
                    )
                    for p in plans
                }
                uploads = _write_uploads(conn, zf, storage, realm_id, restrict)
                manifest = {
                    "format": FORMAT_NAME,
                    "format_version": FORMAT_VERSION,
                    "exported_at": utcnow().isoformat(),
                    "realm": {
                        "id": realm_id,
                        "string_id": realm["string_id"],
                        "name": realm["name"],
                        "email_host": realm_email_host(
                            services.settings, Realm(string_id=realm["string_id"])
                        ),
                    },
                    "tables": tables,
                    "uploads": uploads,
                    "secrets": include_secrets,
                }
                zf.writestr(MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
            bar.finish()
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return ExportResult(path, manifest, time.monotonic() - started)


def _count(conn: Connection, plan: TablePlan, realm_id: int, restrict: Restrictions | None) -> int:
    condition = scoped_condition(plan.name, realm_id, restrict)
    query = select(func.count()).select_from(plan.table).where(condition)
    return int(conn.scalar(query) or 0)


def _write_table(
    conn: Connection,
    zf: zipfile.ZipFile,
    plan: TablePlan,
    realm_id: int,
    batch_size: int,
    bar: Progress,
    restrict: Restrictions | None,
    include_secrets: bool,
) -> dict[str, int | None]:
    binary = frozenset(c.name for c in plan.table.columns if isinstance(c.type, LargeBinary))
    secret = (
        []
        if include_secrets
        else [c.name for c in plan.table.columns if (plan.name, c.name) in SECRET_COLUMNS]
    )
    members: dict[int, list[int]] = defaultdict(list)
    if plan.name == "direct_message_group":
        # Few rows, each with a hash of its members' IDs, which change on import.
        for group_id, user_id in conn.execute(direct_message_group_members(realm_id)):
            members[group_id].append(user_id)
    rows, low, high = 0, None, None
    query = realm_rows(plan, realm_id, restrict).execution_options(yield_per=batch_size)
    with zf.open(table_member(plan.name), "w", force_zip64=True) as out:
        for batch in conn.execute(query).mappings().partitions():
            chunk = []
            for mapping in batch:
                row = dict(mapping)
                if plan.own_id is not None:
                    key = row[plan.own_id]
                    low = key if low is None else min(low, key)
                    high = key if high is None else max(high, key)
                if members:
                    row[MEMBERS_FIELD] = members.get(row["id"], [])
                for column in secret:
                    row[column] = None
                chunk.append(encode_row(row, binary))
            out.write(b"".join(chunk))
            rows += len(batch)
            bar.advance(len(batch), plan.name)
    return {"rows": rows, "min_id": low, "max_id": high}


def _write_uploads(
    conn: Connection, zf: zipfile.ZipFile, storage: FileStorage, realm_id: int, restrict: Restrictions | None
) -> dict[str, int]:
    condition = scoped_condition("attachment", realm_id, restrict)
    keys = list(conn.scalars(select(Attachment.path_id).where(condition)))
    emoji = conn.scalars(
        select(RealmEmoji.file_name).where(RealmEmoji.realm_id == realm_id, RealmEmoji.file_name != "")
    )
    keys += [emoji_storage_key(realm_id, name) for name in emoji]
    files = size = missing = 0
    for key in keys:
        data = storage.read(key)
        if data is None:
            missing += 1  # a row whose file is gone: the row is kept, as on the source
            continue
        zf.writestr(upload_member(key), data)
        files += 1
        size += len(data)
    return {"files": files, "bytes": size, "missing": missing}
