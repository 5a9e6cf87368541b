"""The malloc arena cap a serving process runs with (bootstrap.limit_malloc_arenas)."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

# In a fresh interpreter: cap the arenas or not, then let eight threads allocate at once
# (glibc gives each new thread an arena of its own until the cap) and count glibc's arenas.
_PROBE = """
import ctypes, os, sys, tempfile, threading
import orjson
from palaver.bootstrap import limit_malloc_arenas

capped = limit_malloc_arenas() if sys.argv[1] == "cap" else None
barrier = threading.Barrier(8)
kept = []

def allocate():
    kept.append([bytearray(4096) for _ in range(64)])
    barrier.wait()

threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile(suffix=".xml") as report:
    stream = libc.fopen(report.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    arenas = open(report.name).read().count("<heap nr=")
sys.stdout.write(orjson.dumps(
    {"capped": capped, "arenas": arenas, "env": os.environ.get("MALLOC_ARENA_MAX")}
).decode())
"""

glibc_only = pytest.mark.skipif(
    not (os.confstr_names.get("CS_GNU_LIBC_VERSION") and os.confstr("CS_GNU_LIBC_VERSION")),
    reason="the arena cap is glibc's",
)


def _probe(mode: str, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        env={**clean, **env},
        capture_output=True,
        check=True,
        timeout=60,
    )
    result: dict[str, object] = orjson.loads(done.stdout)
    return result


@glibc_only
def test_serving_caps_malloc_arenas_at_two_for_its_threads_and_children() -> None:
    uncapped = _probe("none")
    capped = _probe("cap")
    # Without the cap the eight threads have arenas of their own (what the probe measures).
    assert isinstance(uncapped["arenas"], int) and uncapped["arenas"] > 2
    assert capped == {"capped": True, "arenas": 2, "env": "2"}


@glibc_only
def test_an_operators_malloc_arena_max_stands() -> None:
    assert _probe("cap", MALLOC_ARENA_MAX="4") == {"capped": False, "arenas": 4, "env": "4"}
