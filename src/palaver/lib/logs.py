"""Log set-up: timestamps, request IDs on every line, and text or JSON output.

Each request gets a ``RequestLog`` in a context variable (``api/middleware.py`` sets it);
context variables follow the request into its worker thread, so any line logged while
serving it carries its request ID, and the pipeline notes the user once it knows them.
"""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from palaver.config import Settings


@dataclass
class RequestLog:
    request_id: str
    user_id: int | None = None


current_request: ContextVar[RequestLog | None] = ContextVar("palaver_request", default=None)


def note_user(user_id: int) -> None:
    """Record the authenticated user for the access log (called by the pipeline)."""
    log = current_request.get()
    if log is not None:
        log.user_id = user_id


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            log = current_request.get()
            record.request_id = log.request_id if log is not None else "-"
        return True


# Attributes every LogRecord has; anything else was passed in ``extra`` and is data.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request ID and extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key != "color_message":
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        # ISO 8601 in UTC with milliseconds: sortable, and the same on every host.
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def configure_logging(settings: Settings) -> None:
    """Route every logger (uvicorn's too) through one stderr handler in the chosen format.

    Idempotent: building several apps in one process keeps one handler. Like
    ``logging.basicConfig``, it leaves alone a root logger someone else configured (pytest,
    an embedding application).
    """
    root = logging.getLogger()
    handler = next((h for h in root.handlers if getattr(h, "palaver", False)), None)
    if handler is None:
        if root.handlers:
            return
        handler = logging.StreamHandler(sys.stderr)
        # Marks the handler as ours, so a second configure_logging does not add another.
        handler.palaver = True  # type: ignore[attr-defined]
        handler.addFilter(_RequestIdFilter())
        root.addHandler(handler)
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else TextFormatter())
    root.setLevel(settings.log_level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        # uvicorn's own handlers (when it configured any) would print each line twice.
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
