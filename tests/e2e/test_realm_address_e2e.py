"""The address ``palaver create-realm`` prints opens, with curl, against ``palaver serve``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.demo import server, server_database_url  # noqa: F401  (fixtures)
from tests.forked import run_forked
from tests.servers import RunningServer, clean_environment

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl, which resolves *.localhost itself"),
]


def test_created_realm_address_opens_with_curl(
    server: RunningServer,  # noqa: F811
    server_database_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    env = clean_environment(
        DATABASE_URL=server_database_url,
        PALAVER_DATA_DIR=str(server.data_dir),
        PALAVER_PORT=str(server.port),
        PALAVER_PASSWORD_TIME_COST="1",
        PALAVER_PASSWORD_MEMORY_COST_KIB="8",
    )
    created = run_forked(
        env,
        [
            "create-realm",
            "--name",
            "Acme",
            "--string-id",
            "acme",
            "--owner-email",
            "boss@acme.test",
            "--owner-name",
            "Boss",
            "--password-stdin",
        ],
        tmp_path,
        input="pw-acme\n",
    )
    assert created.returncode == 0, created.stderr
    first = created.stdout.splitlines()[0]
    url = first.rsplit(" at ", 1)[1]
    assert url == f"http://acme.localhost:{server.port}"
    # curl resolves *.localhost to loopback without the system resolver, as browsers do.
    fetched = subprocess.run(
        ["curl", "--silent", "--show-error", "--noproxy", "*", f"{url}/api/v1/server_settings"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert fetched.returncode == 0, fetched.stderr
    settings = json.loads(fetched.stdout)
    assert settings["realm_name"] == "Acme" and settings["realm_url"] == url
