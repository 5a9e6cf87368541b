"""A bounded schemathesis run against a live server's /openapi.json: no request, however
malformed, gets a 5xx.

Bounded to fit CI: a few examples per operation, one worker, a fixed seed and a time budget
(``MAX_SECONDS``). Rate limits are off so the generated requests reach the views. Left out:
``GET /events`` (a long-poll, which waits by design) and the operations that end the run's
own access (deactivating oneself or the organization).
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

from tests.servers import server_environment, start_running_server, stop

MAX_SECONDS = 75
EXCLUDED_OPERATIONS = ("get-events", "deactivate-own-user", "deactivate-realm")


def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    env = server_environment(tmp_path / "data", PALAVER_RATE_LIMITING="false")
    server = start_running_server(tmp_path, env)
    try:
        rc = configparser.ConfigParser()
        rc.read(server.zuliprc)
        email, key = rc["api"]["email"], rc["api"]["key"]
        excluded = [arg for op in EXCLUDED_OPERATIONS for arg in ("--exclude-operation-id", op)]
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                f"{server.url}/openapi.json",
                "--auth",
                f"{email}:{key}",
                "--checks",
                "not_a_server_error",
                "--phases",
                "examples,coverage,fuzzing",
                "--max-examples",
                "3",
                "--workers",
                "1",
                "--seed",
                "20261201",
                "--max-time",
                str(MAX_SECONDS),
                "--request-timeout",
                "30",
                "--no-shrink",
                *excluded,
            ],
            capture_output=True,
            text=True,
            timeout=MAX_SECONDS + 120,
            check=False,
            cwd=tmp_path,  # its own cache directory goes there, not into the work tree
        )
        logs = server.stderr.read_text()
    finally:
        stop(server.process)
    summary = done.stdout[-6000:]
    assert done.returncode == 0, summary
    generated = re.search(r"(\d+) generated", done.stdout)
    # Not a vacuous run: thousands of requests reached the server.
    assert generated is not None and int(generated.group(1)) >= 1000, summary
    assert "Server error" not in done.stdout, summary
    assert "Unhandled error" not in logs, logs[-4000:]
