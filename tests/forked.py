"""``palaver serve`` forked from a process that has imported Palaver once, for the tests.

A fresh ``palaver`` process spends ~2.5 s of CPU importing Palaver, SQLAlchemy, pydantic
and uvicorn before it serves; the suite starts a few dozen servers. So, as ``palaver
serve --workers N`` does for its workers (``bootstrap.py``), the tests start servers from
multiprocessing's fork server, with the modules a server imports preloaded there. Each
forked child then becomes what ``launch`` made before: its own session and process group
(a test signals the server and its workers together), the test's environment and nothing
else, stdout and stderr on files, stdin on /dev/null, and ``palaver.cli.main`` with the
test's arguments, its exit status read back through multiprocessing.

This module is imported by the fork server, so it imports nothing of pytest's.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import subprocess
import sys
import uuid
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from palaver.bootstrap import worker_modules

# What ``palaver serve`` imports before it answers (the app with its API modules, the demo
# organization, uvicorn with the loop and protocol it runs); loaded once, in the fork server.
# Also Alembic with the migrations: a server migrates in a forked child (bootstrap.py), which
# would otherwise import them again at every start (~0.15 s of CPU each). The servers the
# tests start hold them in memory as a result, which a real server does not.
PRELOAD = [
    "palaver.cli",
    "palaver.bootstrap",
    *worker_modules(),
    "palaver.app",
    "palaver.demo",
    "palaver.migrate",
    "uvicorn",
    "uvicorn.main",
    "palaver.supervisor",
    "uvicorn.loops.uvloop",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.httptools_impl",
    "tests.forked",
]


class ForkedProcess:
    """The parts of ``subprocess.Popen`` the tests use, for a forked server: its exit code
    comes from the fork server (which reaps it), signals go straight to its PID."""

    def __init__(self, process: BaseProcess, args: list[str]) -> None:
        self._process = process
        self.args = args

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_palaver(
    env: dict[str, str],
    args: list[str],
    stdout: Path,
    stderr: Path | None = None,
    *,
    append: bool = False,
    stdin: Path | None = None,
) -> ForkedProcess:
    """``palaver *args`` as a child of the tests' fork server (started on first use), its
    output to files (``stderr`` None joins stdout), its input from ``stdin`` or /dev/null."""
    context = multiprocessing.get_context("forkserver")
    # Only the first call matters: the fork server starts once, with these modules.
    context.set_forkserver_preload(PRELOAD)
    files = [str(stdout), None if stderr is None else str(stderr), None if stdin is None else str(stdin)]
    process = context.Process(target=run_palaver, args=(env, args, files, append))
    process.start()
    return ForkedProcess(process, ["palaver", *args])


def run_forked(
    env: dict[str, str], args: list[str], directory: Path, *, input: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Like ``subprocess.run([palaver, *args], capture_output=True, text=True)``, forked:
    a one-off command (``migrate``, ``create-user``...) without its seconds of imports."""
    directory.mkdir(parents=True, exist_ok=True)
    names = ("stdin", "stdout", "stderr")
    token = uuid.uuid4().hex
    stdin, stdout, stderr = (directory / f"command-{token}.{name}" for name in names)
    stdin.write_text(input)
    process = fork_palaver(env, args, stdout, stderr, stdin=stdin)
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    result = subprocess.CompletedProcess(["palaver", *args], code, stdout.read_text(), stderr.read_text())
    for path in (stdin, stdout, stderr):
        path.unlink()
    return result


def stop_fork_server() -> None:
    """Close this process's end of the fork server's "alive" pipe (its servers close theirs)
    and wait until it exits. Does nothing if none was started."""
    server: Any = multiprocessing.forkserver._forkserver  # private state typeshed does not declare
    if server._forkserver_pid is not None:
        server._stop()


def run_palaver(env: dict[str, str], args: list[str], files: list[str | None], append: bool) -> None:
    """In the forked child: become a fresh ``palaver`` process, then run the command."""
    os.setsid()
    # If the fork server goes (pytest ended without its teardown), the server follows.
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    _forget_the_parents_multiprocessing()
    # A new interpreter starts with default dispositions and nothing blocked.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(env)
    _redirect(*files, append=append)
    sys.argv = ["palaver", *args]
    from palaver.cli import main

    main(args)


def _forget_the_parents_multiprocessing() -> None:
    """A child of a fork server inherits its connection to that server and to its resource
    tracker. ``palaver serve --workers N`` must start its own fork server, as it does in a
    fresh interpreter, so that its workers are its descendants (in its process group, and
    where tests look for them) and not siblings forked by the tests' server."""
    # The modules' one instances, and private state typeshed does not declare.
    server: Any = multiprocessing.forkserver._forkserver
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
    server._forkserver_alive_fd = None
    server._forkserver_address = None
    server._forkserver_pid = None
    server._inherited_fds = None
    server._preload_modules = ["__main__"]
    tracker: Any = multiprocessing.resource_tracker._resource_tracker
    if tracker._fd is not None:
        os.close(tracker._fd)
    tracker._fd = None
    tracker._pid = None


def _redirect(stdout: str | None, stderr: str | None, stdin: str | None, *, append: bool) -> None:
    assert stdout is not None
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    null = os.open(stdin or os.devnull, os.O_RDONLY)
    out = os.open(stdout, flags, 0o644)
    err = out if stderr is None else os.open(stderr, flags, 0o644)
    for source, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(source, target)
    for fd in {null, out, err}:
        os.close(fd)
    # As Python sets them up for files: stdout block-buffered, stderr line-buffered.
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (the process's own)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
