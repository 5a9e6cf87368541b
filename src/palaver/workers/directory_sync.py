"""The company directory's people into every organization that signs in with it, each
``[auth.ldap]`` ``sync_interval_minutes`` (what ``palaver sync-ldap`` does on demand).

Rounds are idempotent, so several server processes running them costs only directory
searches; a directory that cannot be reached is logged and tried again next round.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from palaver.actions.external_logins import DirectorySyncReport, do_sync_directory
from palaver.lib.auth_methods import LDAP, method_enabled
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm import realm_email_host
from palaver.lib.storage import make_storage
from palaver.models import Realm
from palaver.services import Services
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)


def sync_all_realms(services: Services) -> dict[str, DirectorySyncReport]:
    """One round: every active organization with the LDAP method on."""
    settings = services.settings
    config = settings.auth.ldap
    if config is None:
        return {}
    # ldap3 is loaded only when [auth.ldap] is configured, not by importing this worker.
    from palaver.lib import ldap_directory  # noqa: PLC0415

    try:
        people = ldap_directory.all_people(config)
    except JsonableError as error:
        logger.warning("directory sync: %s", error.msg)
        return {}
    reports: dict[str, DirectorySyncReport] = {}
    storage = make_storage(settings)
    with services.db.session() as session:
        realms = session.scalars(select(Realm).where(Realm.deactivated.is_(False)).order_by(Realm.id)).all()
        for realm in realms:
            if not method_enabled(settings, realm, LDAP):
                continue
            report = do_sync_directory(
                session,
                realm,
                people,
                provider=ldap_directory.PROVIDER,
                email_host=realm_email_host(settings, realm),
                storage=storage,
            )
            reports[realm.string_id] = report
            if report.deactivated:
                logger.info(
                    "directory sync: deactivated %s in %r", ", ".join(report.deactivated), realm.string_id
                )
            if report.reactivated:
                logger.info(
                    "directory sync: reactivated %s in %r", ", ".join(report.reactivated), realm.string_id
                )
    return reports


class DirectorySyncWorker(BackgroundWorker):
    name = "palaver-directory-sync"
    label = "directory sync"
    logger = logger
    daemon_thread = True

    def run_round(self) -> None:
        sync_all_realms(self.services)

    def default_delay(self) -> float | None:
        config = self.services.settings.auth.ldap
        return (
            None
            if config is None or not config.sync_interval_minutes
            else config.sync_interval_minutes * 60.0
        )

    def first_delay(self) -> float | None:
        # Not at once: a restart should serve first.
        return None if self.default_delay() is None else 120.0
