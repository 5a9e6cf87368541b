"""The main process of ``palaver serve --workers N``: one listening socket per worker slot.

Why slots: each worker's loop accepts every waiting connection at once (listening.py), so
on one shared socket a burst of connections arriving together (a load balancer opening its
pool, clients reconnecting after a restart) goes almost entirely to whichever worker wakes
first: of 32 keep-alive connections opened together, two workers held 32/0 or 23/9, where
plain uvloop (one accept per turn, and seconds slower to let a burst in) splits them 16/16.
So the main process binds one socket per slot on the same address with ``SO_REUSEPORT``,
and the kernel spreads new connections over them by a hash of their addresses.

Built on public APIs only: ``multiprocessing`` starts the workers, each runs
``uvicorn.Server(config).run(sockets=[its slot's socket])``. The invariants:

- Worker *i* serves slot *i*. Each slot's socket stays open here for the server's whole
  life, so replacing a slot's worker (HUP, a crash, a hung worker) never closes it:
  connections that arrive meanwhile wait in its backlog for the replacement. A slot removed
  with TTOU closes its socket only after its worker has stopped; connections still queued
  on it are then reset (Linux hands them on only with ``net.ipv4.tcp_migrate_req``).
- Workers are forked from multiprocessing's fork server, which imports ``preload`` (the
  app's modules) once: a spawned worker spent 2.4-3.1 s of CPU importing them again.
- Twice a second every worker is pinged over its pipe. One that is dead, or that does not
  answer within ``timeout_worker_healthcheck`` (hung), is killed and replaced on its slot.
  The wait ends as soon as the worker dies (``answer_or_death``), not at the timeout.
- A worker that exits with uvicorn's ``STARTUP_FAILURE`` (its app or settings are broken,
  so every replacement would fail too) stops the server, whose ``run`` then returns it.
- TERM/INT: each worker gets SIGTERM and drains (serving.on_stop_signals answers its
  parked long-polls at once, then uvicorn finishes in-flight requests); this process waits
  for all of them. HUP: each worker in turn is replaced by a new one, which must be ready
  before the old one stops; one not ready in time aborts the restart. TTIN/TTOU add or
  remove the last slot.

A worker alive but stuck still receives its share of connections until its health check
fails, and ``SO_REUSEPORT`` lets another process of the same user bind the same port, which
``palaver serve`` refuses before binding (commands/ports.py).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext
from types import FrameType

import uvicorn
from uvicorn.config import STARTUP_FAILURE, Config

logger = logging.getLogger("palaver.server")

_STOP = (signal.SIGTERM, signal.SIGINT)
# The signals this process acts on; the others keep their default action.
_HANDLED = (*_STOP, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU)


def bind_slot_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` that other slots may bind too; the worker listens on it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        logger.error("cannot bind %s:%d: %s", host, port, exc)
        raise SystemExit(STARTUP_FAILURE) from exc
    return sock


def answer_or_death(conn: Connection, sentinel: int, timeout: float) -> bool | None:
    """The worker's answer to a health check just sent on ``conn``; None once it is dead or late.

    Waiting on the process's sentinel as well as the pipe ends the wait when the worker dies
    after the ping went out (a crash, the OOM killer), rather than at the timeout.
    """
    try:
        if conn in wait([conn, sentinel], timeout):
            started: bool = conn.recv()
            return started
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    return None


def serve_slot(config: Config, sock: socket.socket, conn: Connection) -> None:
    """A worker: answer health checks with whether the server has started, and serve ``sock``."""
    config.configure_logging()
    server = uvicorn.Server(config)

    def answer_pings() -> None:
        try:
            while True:
                conn.recv()
                conn.send(server.started)
        except (EOFError, OSError):
            return  # the supervisor closed its end: it is stopping this worker

    threading.Thread(target=answer_pings, name="palaver-health", daemon=True).start()
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C; the supervisor stops anyway
        server.run(sockets=[sock])


class Worker:
    """The supervisor's handle on one worker process and its end of the health-check pipe."""

    def __init__(self, context: ForkServerContext, config: Config, sock: socket.socket) -> None:
        self.conn, child_conn = context.Pipe()
        self.process = context.Process(
            target=serve_slot, args=(config, sock, child_conn), name="palaver-worker"
        )
        self.process.start()
        child_conn.close()  # the worker has its own copy now

    def health(self, timeout: float) -> bool | None:
        """Whether the worker's server has started; None if it is dead or did not answer in time."""
        if not self.process.is_alive():
            return None
        try:
            self.conn.send(b"ping")
        except OSError:
            return None
        return answer_or_death(self.conn, self.process.sentinel, timeout)

    def wait_until_ready(self, timeout: float, stopping: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not stopping() and self.process.is_alive():
            if self.health(timeout=1):
                return True
            time.sleep(0.1)
        return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.exitcode is None and self.process.pid is not None:
            # The fork server reaps a dead worker before it reports the exit code, so a worker
            # whose exitcode still reads None may already be gone: that is the stop achieved.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, sig)

    def join(self) -> None:
        self.process.join()
        self.conn.close()


class Supervisor:
    """Runs ``config.workers`` workers, worker ``i`` always on slot ``i``'s socket."""

    def __init__(self, config: Config, preload: list[str]) -> None:
        self.config = config
        multiprocessing.allow_connection_pickling()
        self.context = multiprocessing.get_context("forkserver")
        # serve_slot's module too: each worker unpickles its target from it.
        self.context.set_forkserver_preload([__name__, *preload])
        # Set by the signal handler itself (a plain assignment: it may run in the middle of any
        # line of this thread), so a rolling restart or a slow health check ends early too.
        self.stopping = False
        self.exit_code = 0
        self.pending: list[int] = []
        self.sockets: list[socket.socket] = []
        self.workers: list[Worker] = []
        for _ in range(config.workers):
            self._add_slot()

    def _add_slot(self) -> None:
        # Slot 0 takes the port first; with port 0 the others follow the port it got.
        port = self.sockets[0].getsockname()[1] if self.sockets else self.config.port
        self.sockets.append(bind_slot_socket(self.config.host, port))

    def _start(self, slot: int) -> Worker:
        return Worker(self.context, self.config, self.sockets[slot])

    def _on_signal(self, sig: int, _frame: FrameType | None) -> None:
        # Only noted: the main loop acts on it between two rounds of health checks.
        if sig in _STOP:
            self.stopping = True
        else:
            self.pending.append(sig)

    def run(self) -> int:
        """Serve until TERM/INT or a worker's start-up failure; the process's exit code."""
        for sig in _HANDLED:
            signal.signal(sig, self._on_signal)
        logger.info("supervisor [%s] starting %d workers", os.getpid(), len(self.sockets))
        try:
            self.workers = [self._start(slot) for slot in range(len(self.sockets))]
            while not self.stopping:
                time.sleep(0.5)
                self._handle_signals()
                self._keep_workers_alive()
            logger.info("stopping the workers")
            for worker in self.workers:
                worker.stop()
            for worker in self.workers:
                worker.join()
        finally:
            for sock in self.sockets:
                sock.close()
        return self.exit_code

    def _handle_signals(self) -> None:
        while self.pending and not self.stopping:
            sig = self.pending.pop(0)
            if sig == signal.SIGHUP:
                logger.info("received SIGHUP; replacing the workers one by one")
                self._restart_all()
            elif sig == signal.SIGTTIN:
                logger.info("received SIGTTIN; adding a worker")
                self._add_slot()
                self.workers.append(self._start(len(self.workers)))
            elif len(self.workers) <= 1:
                logger.info("received SIGTTOU with one worker left; keeping it")
            else:
                logger.info("received SIGTTOU; removing a worker")
                worker = self.workers.pop()
                worker.stop()
                worker.join()
                # Closed only now: while the worker was stopping, its socket still took connections.
                self.sockets.pop().close()

    def _restart_all(self) -> None:
        """Replace each worker by a new one on the same slot, the new one ready before the old stops."""
        for slot, old in enumerate(self.workers):
            if self.stopping:
                return
            new = self._start(slot)
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, lambda: self.stopping):
                new.stop(signal.SIGKILL)
                new.join()
                if not self.stopping:
                    logger.error(
                        "worker [%s] was not ready in time; keeping worker [%s] and aborting the restart",
                        new.process.pid,
                        old.process.pid,
                    )
                return
            old.stop()
            old.join()
            self.workers[slot] = new

    def _keep_workers_alive(self) -> None:
        for slot, worker in enumerate(self.workers):
            if self.stopping:
                return
            if worker.health(self.config.timeout_worker_healthcheck) is not None:
                continue
            worker.stop(signal.SIGKILL)  # hung: it answered no health check
            worker.join()
            if worker.process.exitcode == STARTUP_FAILURE:
                # It failed before serving: the app or its settings are broken, and every
                # replacement would fail the same way.
                logger.error("worker [%s] failed to start; stopping", worker.process.pid)
                self.exit_code = STARTUP_FAILURE
                self.stopping = True
                return
            if self.stopping:
                return
            logger.info("worker [%s] died; starting another on its slot", worker.process.pid)
            self.workers[slot] = self._start(slot)
