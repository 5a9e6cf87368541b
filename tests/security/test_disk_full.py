"""A full disk answers clearly and recovers by itself: 507 "Storage full" for uploads and
database writes, one log line per outage, nothing half-written, and the same requests
succeed once there is room again.

Runs on a small tmpfs holding the data directory (SQLite database and uploads), which needs
root (mount); elsewhere it is skipped, saying why.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaver.app import create_app
from palaver.migrate import upgrade
from tests.api.test_messages_send import send_dm
from tests.client import TestClient
from tests.helpers import Api, assert_json_success, seed_realm
from tests.sqlite_services import sqlite_services

TMPFS_SIZE = "24m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> Path:
    """Take every free byte of the file system under ``directory``."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as f:
        chunk = b"\0" * (1024 * 1024)
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                continue
    return filler


def _wait_for(condition: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_full_disk_is_507_then_recovers(small_disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="palaver.dependencies")
    with sqlite_services(small_disk) as services:
        upgrade(services.db.engine)
        realm = seed_realm(services)
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            before = send_dm(api, realm.iago, [realm.othello], "before the disk filled")
            # The write-ahead log starts empty, so every later write needs new room.
            conn = sqlite3.connect(small_disk / "palaver.db")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
            uploads = services.settings.upload_dir
            assert uploads is not None
            files_before = sorted(p for p in uploads.rglob("*") if p.is_file()) if uploads.exists() else []
            filler = _fill(small_disk)

            upload = api.post(
                realm.iago, "user_uploads", files={"file": ("a.txt", b"x" * 200_000, "text/plain")}
            )
            assert upload.status_code == 507, upload.text
            assert "Storage full" in upload.json()["msg"] and upload.json()["result"] == "error"
            assert upload.headers["retry-after"]
            for attempt in range(3):
                sent = api.post(
                    realm.iago,
                    "messages",
                    {
                        "type": "private",
                        "to": f"[{realm.othello.id}]",
                        "content": f"lost {attempt} " + "y" * 9000,
                    },
                )
                assert sent.status_code == 507, sent.text
                assert "Storage full" in sent.json()["msg"]
            full_lines = [r for r in caplog.records if "storage full" in r.getMessage()]
            assert len(full_lines) == 1, [r.getMessage() for r in caplog.records]
            assert (
                "database or disk is full" in full_lines[0].getMessage()
                or "No space" in full_lines[0].getMessage()
            )

            # Nothing half-written: no stray upload files, no message stored.
            files_now = sorted(p for p in uploads.rglob("*") if p.is_file()) if uploads.exists() else []
            assert files_now == files_before
            filler.unlink()
            _wait_for(lambda: any("has room again" in r.getMessage() for r in caplog.records))

            assert_json_success(
                api.post(realm.iago, "user_uploads", files={"file": ("a.txt", b"x" * 200_000, "text/plain")})
            )
            after = send_dm(api, realm.iago, [realm.othello], "after the disk had room")
            history = assert_json_success(
                api.get(
                    realm.othello,
                    "messages",
                    {"anchor": before, "num_before": 0, "num_after": 10, "apply_markdown": "false"},
                )
            )
            assert [m["content"] for m in history["messages"]] == [
                "before the disk filled",
                "after the disk had room",
            ]
            assert [m["id"] for m in history["messages"]][-1] == after
