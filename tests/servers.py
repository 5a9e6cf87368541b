"""Starting ``palaver serve`` as a real process, for every test that needs one.

One way to build its environment, launch it (output to files, never to pipes nobody
drains), wait until it answers (``/health``, polled every 50 ms) and stop it. Servers are
forked from the tests' fork server (``tests/forked.py``: the same process, without paying
for Palaver's imports at every start); ``entry_point=True`` runs the installed ``palaver``
command instead, for the tests that check what an operator starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

from palaver.config import Settings
from tests.forked import fork_palaver

# How often a starting server is asked whether it answers yet.
POLL_INTERVAL = 0.05

# httpx makes a new SSL context, reading the whole CA bundle, for every client it creates
# (every ``httpx.get`` too): ~30 ms of CPU each, a quarter of the e2e tests' CPU while
# they polled servers for health. The suite's servers speak plain HTTP; the tests' clients
# share this one context.
TLS = ssl.create_default_context()


def http_client(**options: Any) -> httpx.Client:
    """``httpx.Client(**options)`` with the shared context."""
    return httpx.Client(verify=TLS, **options)


def http_get(url: str, **options: Any) -> httpx.Response:
    """``httpx.get`` with the shared context."""
    return httpx.get(url, verify=TLS, **options)


def http_post(url: str, **options: Any) -> httpx.Response:
    """``httpx.post`` with the shared context."""
    return httpx.post(url, verify=TLS, **options)


@contextlib.contextmanager
def serving_in_a_thread(server: ThreadingHTTPServer) -> Iterator[None]:
    """``server`` (a test's own HTTP server) answering from daemon threads until the block ends."""
    server.daemon_threads = True
    # serve_forever checks for shutdown() every poll_interval: 0.5 s by default, which every
    # test using such a server then waited in its teardown.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def asgi_on_loopback(app: Any) -> Iterator[str]:
    """A test's own ASGI app (a service double) served by uvicorn from a daemon thread on a
    free loopback port until the block ends; yields its base URL."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the loopback server did not start"
        time.sleep(POLL_INTERVAL)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def palaver_command() -> list[str]:
    script = Path(sys.executable).parent / "palaver"
    return [str(script)] if script.exists() else [sys.executable, "-m", "palaver.cli"]


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that configures Palaver, plus ``extra``."""
    names = {f"PALAVER_{name.upper()}" for name in Settings.model_fields}
    names |= {"PALAVER_CONFIG", "PALAVER_SETTINGS_JSON", "DATABASE_URL", "REDIS_URL"}
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update(extra)
    return env


def server_environment(data_dir: Path, **extra: str) -> dict[str, str]:
    """``clean_environment`` for a real server a test starts: its data directory, cheap password
    hashing, quiet logs, no outgoing fetches (tests contact loopback only), plus ``extra``,
    which may override any of them."""
    defaults = {
        "PALAVER_DATA_DIR": str(data_dir),
        "PALAVER_PASSWORD_TIME_COST": "1",
        "PALAVER_PASSWORD_MEMORY_COST_KIB": "8",
        "PALAVER_LOG_LEVEL": "warning",
        "PALAVER_OUTGOING_FETCHES": "false",
    }
    return clean_environment(**(defaults | extra))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """Runs in the child before exec: if pytest is killed before its teardown, the server
    gets SIGTERM rather than living on as an orphan (Linux)."""
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class ServerProcess(Protocol):
    """A started server: a ``subprocess.Popen`` or a ``tests.forked.ForkedProcess``."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def launch(
    env: dict[str, str],
    args: Sequence[str],
    stdout: Path,
    stderr: Path | None = None,
    *,
    append: bool = False,
    entry_point: bool = False,
) -> ServerProcess:
    """``palaver serve *args`` in its own process group (so a test can signal the
    supervisor and its workers together), output to files (after what they hold, with
    ``append``); ``stderr`` None joins stdout. Forked from the tests' fork server, or with
    ``entry_point`` a new process running the ``palaver`` command."""
    if not entry_point:
        return fork_palaver(env, ["serve", *args], stdout, stderr, append=append)
    mode = "ab" if append else "wb"
    with contextlib.ExitStack() as files:
        out = files.enter_context(stdout.open(mode))
        err = subprocess.STDOUT if stderr is None else files.enter_context(stderr.open(mode))
        return subprocess.Popen(
            [*palaver_command(), "serve", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            # Only what a fork may safely run: one prctl call.
            preexec_fn=die_with_parent,
        )


def wait_until_healthy(
    url: str, process: ServerProcess, logs: Callable[[], str], timeout: float = 60
) -> float:
    """Until ``GET /health`` answers 200 (uvicorn accepts connections only once the app has
    started: migrations run, queues restored); the seconds it took. Fails at once if the
    process exits, and after ``timeout``."""
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"palaver serve exited with {process.returncode}\n{logs()}")
        try:
            if http_get(f"{url}/health", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(POLL_INTERVAL)
    raise AssertionError(f"palaver serve did not answer within {timeout} s\n{logs()}")


@dataclass
class RunningServer:
    url: str
    port: int
    data_dir: Path
    stdout: Path
    stderr: Path
    process: ServerProcess

    def output(self) -> str:
        return self.stdout.read_text()

    def logs(self) -> str:
        return f"stdout:\n{self.output()[-2000:]}\nstderr:\n{self.stderr.read_text()[-3000:]}"

    @property
    def zuliprc(self) -> Path:
        return self.data_dir / "demo.zuliprc"


def start_running_server(
    tmp: Path, env: dict[str, str], *args: str, entry_point: bool = False
) -> RunningServer:
    """``palaver serve --port <free> *args`` with stdout and stderr in ``tmp``, once it answers."""
    port = free_port()
    stdout, stderr = tmp / "stdout.txt", tmp / "stderr.txt"
    process = launch(env, ["--port", str(port), *args], stdout, stderr, entry_point=entry_point)
    running = RunningServer(
        f"http://127.0.0.1:{port}", port, Path(env["PALAVER_DATA_DIR"]), stdout, stderr, process
    )
    try:
        wait_until_serving(running)
    except BaseException:
        stop(process)
        raise
    return running


def wait_until_serving(server: RunningServer, timeout: float = 60) -> None:
    try:
        wait_until_healthy(server.url, server.process, server.logs, timeout)
    except AssertionError as error:
        pytest.fail(str(error))


def stop(process: ServerProcess) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
