"""The preview worker: fetches what new messages link to and appends previews to them.

Runs only with the ``outgoing_fetches`` setting on. It hears the messages this process sends
(the bus's listener), and works through them one at a time in a thread, with the limits of
``lib/fetch.py``. What a link showed is remembered for a while, so a link posted in many
messages is fetched once. A preview that cannot be made is simply left out; the message is
never held back. Messages sent while the process stops are not previewed (as with Zulip's
queue being drained at shutdown, previews are a courtesy, not a promise).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from palaver.actions.thumbnails import do_update_rendered_content
from palaver.lib.fetch import Fetcher, FetchError
from palaver.lib.images import BadImageError, resize_frames
from palaver.lib.previews import (
    MAX_IMAGE_BYTES,
    MAX_PAGE_BYTES,
    PREVIEW_IMAGE_SIZE,
    embed_markup,
    image_markup,
    looks_like_image,
    preview_image_key,
    preview_links,
    read_page,
    stored_image_url,
)
from palaver.lib.storage import make_storage
from palaver.models import Realm
from palaver.models.messages import Message
from palaver.services import Services
from palaver.workers.loop import BackgroundWorker
from palaver.workers.thumbnails import rendered_message

logger = logging.getLogger(__name__)

_CACHE_SECONDS = 3600.0
_CACHE_SIZE = 500


class PreviewWorker(BackgroundWorker):
    name = "palaver-previews"
    label = "preview"
    logger = logger
    waking_events = frozenset({"message", "update_message"})

    def __init__(self, services: Services, fetcher: Fetcher | None = None) -> None:
        super().__init__(services)
        settings = services.settings
        self.fetcher = fetcher or Fetcher(allow_private=settings.outgoing_fetches_allow_private)
        self._queue: list[int] = []
        self._lock = threading.Lock()
        # (realm ID, URL, images on, embeds on) -> (when, markup or None)
        self._cache: OrderedDict[tuple[int, str, bool, bool], tuple[float, str | None]] = OrderedDict()

    # Making previews ------------------------------------------------------------------------

    def _own_host(self, host: str) -> bool:
        base = (urlsplit(self.services.settings.external_url).hostname or "").lower()
        return host == base or host.endswith("." + base)

    def _store_image(self, realm_id: int, url: str, data: bytes) -> str | None:
        try:
            thumbnail = resize_frames(data, *PREVIEW_IMAGE_SIZE, "webp", animated=True)
        except BadImageError:
            return None
        key = preview_image_key(realm_id, url)
        make_storage(self.services.settings).save(key, thumbnail, "image/webp")
        return stored_image_url(key)

    def _fetch_image(self, realm_id: int, url: str) -> str | None:
        try:
            fetched = self.fetcher.get(url, max_bytes=MAX_IMAGE_BYTES, accept="image/*")
        except FetchError as e:
            logger.info("preview image %s not fetched: %s", url, e)
            return None
        if not fetched.content_type.startswith("image/"):
            return None
        return self._store_image(realm_id, url, fetched.body)

    def preview_for(self, realm: Realm, url: str) -> str | None:
        """The markup previewing one link, or None."""
        images, embeds = realm.inline_image_preview, realm.inline_url_embed_preview
        key = (realm.id, url, images, embeds)
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < _CACHE_SECONDS:
            return cached[1]
        markup = self._make_preview(realm.id, url, images, embeds)
        self._cache[key] = (time.monotonic(), markup)
        self._cache.move_to_end(key)
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return markup

    def _make_preview(self, realm_id: int, url: str, images: bool, embeds: bool) -> str | None:
        if looks_like_image(url):
            if not images:
                return None
            src = self._fetch_image(realm_id, url)
            return image_markup(url, src) if src else None
        if not embeds:
            return None
        try:
            fetched = self.fetcher.get(url, max_bytes=MAX_PAGE_BYTES, accept="text/html,image/*")
        except FetchError as e:
            logger.info("preview of %s not fetched: %s", url, e)
            return None
        if fetched.content_type.startswith("image/"):
            src = self._store_image(realm_id, url, fetched.body) if images else None
            return image_markup(url, src) if src else None
        if fetched.content_type not in ("text/html", "application/xhtml+xml"):
            return None
        page = read_page(fetched.body, fetched.url)
        image_src = self._fetch_image(realm_id, page.image) if page.image else None
        return embed_markup(url, page, image_src)

    def preview_message(self, message_id: int) -> bool:
        """Append previews of a message's links; True if the message changed."""
        if not self.services.settings.outgoing_fetches:
            return False
        with self.services.db.session() as session:
            message = session.get(Message, message_id)
            if message is None:
                return False
            realm = session.get(Realm, message.realm_id)
            html = message.rendered_content or ""
            if realm is None or not (realm.inline_image_preview or realm.inline_url_embed_preview):
                return False
            links = [u for u in preview_links(html, set()) if not self._own_host(urlsplit(u).hostname or "")]
            session.rollback()  # no transaction held open while fetching
            previews = [p for p in (self.preview_for(realm, url) for url in links) if p]
            if not previews:
                return False
            message = session.get(Message, message_id)
            if message is None or (message.rendered_content or "") != html:
                return False  # edited meanwhile; the edit's own round previews it
            return do_update_rendered_content(session, message, html + "".join(previews))

    def run_pending(self) -> int:
        changed = 0
        while True:
            with self._lock:
                if not self._queue:
                    return changed
                message_id = self._queue.pop(0)
            try:
                changed += self.preview_message(message_id)
            except Exception:
                logger.exception("previews of message %s failed", message_id)

    # Running in the server ------------------------------------------------------------------

    def run_round(self) -> None:
        self.run_pending()

    def first_delay(self) -> None:
        return None  # its work is the messages it hears: rounds only when woken, no timer

    def wakes_on(self, event: dict[str, Any]) -> bool:
        # New messages and content edits (an edit renders afresh, without previews).
        message_id, content = rendered_message(event)
        if message_id is None or 'href="http' not in content:
            return False
        with self._lock:
            if message_id not in self._queue:
                self._queue.append(message_id)
        return True

    def on_stop(self) -> None:
        self.fetcher.close()
