"""palaver doctor against a real server, a real SMTP server, and deployments with faults."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaver.cli import main
from tests.email_helpers import SmtpSink, free_port, smtp_server  # noqa: F401  (fixture)
from tests.servers import RunningServer, server_environment, start_running_server, stop


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("doctor")
    data = tmp / "data"
    data.mkdir(mode=0o700)
    env = server_environment(data, PALAVER_CREATE_DEMO_REALM="false")
    server = start_running_server(tmp, env)
    try:
        yield server
    finally:
        stop(server.process)


def doctor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], **env: str
) -> tuple[int, str]:
    for name in [n for n in os.environ if n.startswith("PALAVER_") or n in ("DATABASE_URL", "REDIS_URL")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    try:
        main(["doctor"])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    return code, capsys.readouterr().out


def lines(out: str) -> dict[str, str]:
    """``check -> status``, the first line of each check (disk and permissions may repeat)."""
    found: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith((" ", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")):
            continue
        status, _, rest = line.partition(" ")
        found.setdefault(rest.strip().split(":", 1)[0], status)
    return found


def test_a_sound_deployment(
    running: RunningServer,
    smtp_server: SmtpSink,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = doctor(
        monkeypatch,
        capsys,
        PALAVER_DATA_DIR=str(running.data_dir),
        PALAVER_EXTERNAL_URL=running.url,
        PALAVER_PORT=str(running.port),
        PALAVER_SMTP_URL=smtp_server.url,
    )
    assert code == 0, out
    found = lines(out)
    for check in ("database", "Redis", "external URL", "proxy headers", "TLS", "SMTP", "disk"):
        assert found[check] == "ok", out
    assert f"ok    external URL: {running.url}/health/ready answers 200" in out
    assert "schema up to date" in out
    assert smtp_server.received == []  # a check sends nothing


def test_a_faulty_deployment_says_what_to_fix(
    running: RunningServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    closed = free_port()
    code, out = doctor(
        monkeypatch,
        capsys,
        PALAVER_DATA_DIR=str(data),
        PALAVER_DATABASE_URL=f"sqlite:///{running.data_dir / 'palaver.db'}",
        # Served through a proxy (another port), over HTTPS, and nobody answers there.
        PALAVER_EXTERNAL_URL=f"https://127.0.0.1:{closed}",
        PALAVER_SMTP_URL=f"smtp://127.0.0.1:{closed}",
    )
    assert code == 1, out
    found = lines(out)
    assert found["database"] == "ok", out
    for check in ("external URL", "proxy headers", "TLS", "SMTP", "permissions"):
        assert found[check] == "FAIL", (check, out)
    assert "trusted_proxies is empty" in out and "fix: set trusted_proxies" in out
    assert f"{data} is writable by everyone" in out and f"fix: chmod o-w {data}" in out
    assert out.rstrip().splitlines()[-1].startswith("5 failed")


def test_trusting_every_address_is_a_failure(
    running: RunningServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = doctor(
        monkeypatch,
        capsys,
        PALAVER_DATA_DIR=str(running.data_dir),
        PALAVER_EXTERNAL_URL=running.url,
        PALAVER_PORT=str(running.port),
        PALAVER_TRUSTED_PROXIES="0.0.0.0/0",
    )
    assert code == 1
    assert "FAIL  proxy headers: trusted_proxies includes 0.0.0.0/0" in out


def test_a_missing_database(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = doctor(monkeypatch, capsys, PALAVER_DATA_DIR=str(tmp_path))
    assert code == 1
    assert f"FAIL  database: no SQLite database at {tmp_path / 'palaver.db'}" in out
    assert "fix: run `palaver migrate`" in out
