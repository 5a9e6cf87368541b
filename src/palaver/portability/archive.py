"""The export archive: a zip of JSON-lines tables, uploaded files and a manifest.

    manifest.json              format, version, realm, per-table row counts and ID ranges
    tables/<table>.jsonl       one JSON object per row, columns by name
    uploads/<storage key>      attachments and custom emoji images

Zip members can be written as a stream and read in any order, so neither side holds a
table in memory. Values are JSON except datetimes (ISO 8601) and binary columns (base64).
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime
from typing import IO, Any, TextIO

import orjson
from sqlalchemy import Date, DateTime, LargeBinary, Table

from palaver.portability import FORMAT_VERSION

FORMAT_NAME = "palaver-realm-export"
MANIFEST = "manifest.json"


class ArchiveError(Exception):
    """An archive that cannot be imported; the message is one line."""


def table_member(name: str) -> str:
    return f"tables/{name}.jsonl"


def upload_member(key: str) -> str:
    return f"uploads/{key}"


def encode_row(row: dict[str, Any], binary_columns: frozenset[str]) -> bytes:
    for column in binary_columns:
        if row.get(column) is not None:
            row[column] = base64.b64encode(row[column]).decode()
    return orjson.dumps(row) + b"\n"


def row_decoder(table: Table) -> Callable[[bytes], dict[str, Any]]:
    """Parse one line back into column values of the table's types."""
    converters: dict[str, Callable[[Any], Any]] = {}
    for column in table.columns:
        if isinstance(column.type, DateTime):
            converters[column.name] = datetime.fromisoformat
        elif isinstance(column.type, Date):
            converters[column.name] = date.fromisoformat
        elif isinstance(column.type, LargeBinary):
            converters[column.name] = base64.b64decode

    def decode(line: bytes) -> dict[str, Any]:
        row: dict[str, Any] = orjson.loads(line)
        for name, convert in converters.items():
            if row.get(name) is not None:
                row[name] = convert(row[name])
        return row

    return decode


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    for line in stream:
        if line.strip():
            yield line


def check_manifest(data: bytes) -> dict[str, Any]:
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ArchiveError("manifest.json is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ArchiveError("not a Palaver export (manifest.json has another format)")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ArchiveError(
            f"export format version {version} is not supported (this Palaver reads {FORMAT_VERSION})"
        )
    return manifest


class Progress:
    """Rows done out of a total, redrawn on one stderr line when it is a terminal."""

    def __init__(self, label: str, total: int, out: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.out = out if out is not None else (sys.stderr if sys.stderr.isatty() else None)
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self.table = ""

    def advance(self, rows: int, table: str) -> None:
        self.done += rows
        self.table = table
        now = time.monotonic()
        if self.out is None or now - self._drawn_at < 0.25:
            return
        self._drawn_at = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        assert self.out is not None
        share = self.done / self.total if self.total else 1.0
        filled = int(share * 30)
        rate = self.done / max(now - self.started, 1e-9)
        self.out.write(
            f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {share:6.1%}"
            f" {self.done:,}/{self.total:,} rows {rate:,.0f}/s {self.table:<28}"
        )
        self.out.flush()

    def finish(self) -> None:
        if self.out is not None:
            self._draw(time.monotonic())
            self.out.write("\n")
            self.out.flush()
