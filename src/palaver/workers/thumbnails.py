"""The thumbnail worker: makes the thumbnails of uploaded images in the background.

Its state is the database (``ImageAttachment.status``), so images uploaded while no worker
ran are thumbnailed at the next start, and several processes share the work: each image is
claimed by a conditional UPDATE (``do_make_thumbnails``). It wakes when this process records
an upload or sends a message still showing a placeholder, and otherwise every
``max_sleep_seconds`` to pick up work other processes left.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from palaver.actions.thumbnails import do_make_thumbnails, do_refresh_thumbnail_markup, pending_image_ids
from palaver.lib.storage import make_storage
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)


def rendered_message(event: dict[str, Any]) -> tuple[int | None, str]:
    """(message ID, rendered HTML) of a new message or a content edit, else (None, "")."""
    if event.get("type") == "message":
        message = event.get("message") or {}
        content = message.get("rendered_content") or message.get("content") or ""
        message_id = message.get("id")
    elif event.get("type") == "update_message" and not event.get("rendering_only"):
        content, message_id = event.get("rendered_content") or "", event.get("message_id")
    else:
        return None, ""
    return (message_id, str(content)) if isinstance(message_id, int) else (None, "")


class ThumbnailWorker(BackgroundWorker):
    name = "palaver-thumbnails"
    label = "thumbnail"
    logger = logger
    waking_events = frozenset({"attachment", "message", "update_message"})

    def __init__(
        self, services: Services, *, max_sleep_seconds: float = 60.0, clock: Callable[[], datetime] = utcnow
    ) -> None:
        super().__init__(services)
        self.max_sleep_seconds = max_sleep_seconds
        self.clock = clock
        # Messages sent with placeholders whose images may already be done (a race with
        # the worker finishing between rendering and sending).
        self._messages: set[int] = set()
        self._messages_lock = threading.Lock()

    def run_pending(self) -> int:
        """Thumbnail every pending image, then fix up waiting messages; returns images done."""
        storage = make_storage(self.services.settings)
        done = 0
        with self.services.db.session() as session:
            while True:
                ids = pending_image_ids(session, self.clock())
                session.rollback()
                progressed = False
                for image_id in ids:
                    try:
                        if do_make_thumbnails(session, storage, image_id, self.clock()):
                            done += 1
                            progressed = True
                    except Exception:
                        logger.exception("thumbnail worker: image %s", image_id)
                        session.rollback()
                if not progressed:
                    break
            with self._messages_lock:
                messages, self._messages = self._messages, set()
            for message_id in sorted(messages):
                try:
                    do_refresh_thumbnail_markup(session, message_id)
                except Exception:
                    logger.exception("thumbnail worker: message %s", message_id)
                    session.rollback()
        return done

    def run_round(self) -> None:
        self.run_pending()

    def default_delay(self) -> float:
        return self.max_sleep_seconds

    def wakes_on(self, event: dict[str, Any]) -> bool:
        wake = event.get("type") == "attachment" and event.get("op") == "add"
        message_id, content = rendered_message(event)
        if message_id is not None and "image-loading-placeholder" in content:
            with self._messages_lock:
                self._messages.add(message_id)
            wake = True
        return wake
