"""Makes the realm exports administrators request (POST /export/realm) in the background.

Each process runs one worker. A request wakes this process's worker at once (through its
``realm_export`` event); other processes notice within ``poll_seconds``. An export is
claimed by a conditional UPDATE, so only one process makes it; the archive is written by
the same exporter as ``palaver export`` to a temporary file, then put in file storage
under an unguessable key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.realm_export import do_claim_realm_export, do_finish_realm_export
from palaver.lib.realm_export import export_restrictions
from palaver.lib.storage import FileStorage, make_storage
from palaver.models import Realm
from palaver.models.realm_export import RealmExportRecord
from palaver.portability.exporter import export_realm
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers import in_daemon_thread

logger = logging.getLogger(__name__)


class ExportWorker:
    def __init__(
        self,
        services: Services,
        *,
        poll_seconds: float = 30.0,
        clock: Callable[[], datetime] = utcnow,
        storage: FileStorage | None = None,
    ) -> None:
        self.services = services
        self.poll_seconds = poll_seconds
        self.clock = clock
        self.storage = storage if storage is not None else make_storage(services.settings)
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def run_pending(self) -> list[int]:
        """Make every pending export this process can claim; their IDs."""
        done = []
        with self.services.db.session() as session:
            pending = list(
                session.scalars(
                    select(RealmExportRecord.id)
                    .where(RealmExportRecord.pending.is_(True))
                    .order_by(RealmExportRecord.id)
                )
            )
            session.rollback()
            for export_id in pending:
                if do_claim_realm_export(session, export_id, self.clock()):
                    self._make(session, export_id)
                    done.append(export_id)
        return done

    def _make(self, session: Session, export_id: int) -> None:
        settings = self.services.settings
        record = session.get(RealmExportRecord, export_id)
        assert record is not None
        realm = session.get(Realm, record.realm_id)
        assert realm is not None
        name = f"palaver-export-{realm.string_id or 'root'}-{export_id}.zip"
        key = f"{realm.id}/exports/{secrets.token_urlsafe(24)}/{name}"
        try:
            with tempfile.TemporaryDirectory(prefix="palaver-export-") as tmp:
                path = Path(tmp) / "export.zip"
                restrict = export_restrictions(realm.id, record.export_type)
                export_realm(self.services, realm.id, path, storage=self.storage, restrict=restrict)
                size = path.stat().st_size
                self.storage.save_file(key, path, "application/zip")
        except Exception:
            logger.exception("realm export %s of %r failed", export_id, realm.string_id)
            session.rollback()
            do_finish_realm_export(session, settings, export_id, None, None)
            return
        session.rollback()
        do_finish_realm_export(session, settings, export_id, key, size)

    # Running in the server ---------------------------------------------------------------

    def _on_event(self, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        if event.get("type") != "realm_export" or self._loop is None or self._wake is None:
            return
        if any(e.get("pending") for e in event.get("exports", [])):
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            try:
                await in_daemon_thread(self.run_pending, "palaver-export")
            except Exception:
                logger.exception("export worker round failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.services.bus.add_listener(self._on_event)
        self._task = asyncio.create_task(self._run(), name="palaver-export-worker")

    async def stop(self) -> None:
        if self._task is None:
            return
        self.services.bus.remove_listener(self._on_event)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
