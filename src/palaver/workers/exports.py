"""Makes the realm exports administrators request (POST /export/realm) in the background.

Each process runs one worker. A request wakes this process's worker at once (through its
``realm_export`` event); other processes notice within ``poll_seconds``. An export is
claimed by a conditional UPDATE, so only one process makes it; the archive is written by
the same exporter as ``palaver export`` to a temporary file, then put in file storage
under an unguessable key.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
from collections.abc import Callable
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
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)


class ExportWorker(BackgroundWorker):
    name = "palaver-export-worker"
    label = "export worker"
    logger = logger
    # Exports take minutes: a shutdown does not wait for one (the next start redoes it).
    daemon_thread = True
    waking_events = frozenset({"realm_export"})

    def __init__(
        self,
        services: Services,
        *,
        poll_seconds: float = 30.0,
        clock: Callable[[], datetime] = utcnow,
        storage: FileStorage | None = None,
    ) -> None:
        super().__init__(services)
        self.poll_seconds = poll_seconds
        self.clock = clock
        self.storage = storage if storage is not None else make_storage(services.settings)

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

    def run_round(self) -> None:
        self.run_pending()

    def default_delay(self) -> float:
        return self.poll_seconds

    def wakes_on(self, event: dict[str, Any]) -> bool:
        return any(e.get("pending") for e in event.get("exports", []))
