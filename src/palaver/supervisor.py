"""The main process of ``palaver serve --workers N``: one listening socket per worker slot.

uvicorn's supervisor binds one socket and hands it to every worker. Each worker's loop
accepts every waiting connection at once (listening.py), so on one shared socket a burst of
connections arriving together (a load balancer opening its pool, clients reconnecting
after a restart) goes almost entirely to whichever worker wakes first: of 32 keep-alive
connections opened together, two workers held 32/0 or 23/9, where plain uvloop (one
accept per turn, and seconds slower to let a burst in) splits them 16/16. Connections stay
where they were accepted, so the imbalance lasts as long as they do.

Here the main process binds one socket per slot on the same address with
``SO_REUSEPORT``, and the kernel spreads new connections over the listening sockets by a
hash of their addresses. Each slot's socket stays open in the main process for the
server's whole life, so replacing the worker of a slot (``kill -HUP``, or after a crash)
never closes it: connections that arrive meanwhile wait in its backlog for the new worker,
as they did with one shared socket. A slot removed with SIGTTOU closes its socket after
its worker has stopped; connections still queued on it then are reset (clients retry), as
Linux hands them to another socket only with ``net.ipv4.tcp_migrate_req`` set.

What the slots do not change: a worker that is alive but stuck still receives its share
of connections (the supervisor's health check replaces it, as before), and
``SO_REUSEPORT`` lets another process of the same user bind the same port, which
``palaver serve`` refuses before binding (commands/ports.py).
"""

from __future__ import annotations

import logging
import pickle
import socket
from multiprocessing.connection import Connection, wait

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

logger = logging.getLogger("palaver.server")


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
    sock.set_inheritable(True)
    return sock


def answer_or_death(conn: Connection, sentinel: int, timeout: float) -> bool | None:
    """The worker's answer to a health check just sent on ``conn``; None once it is dead or late.

    uvicorn waits on the pipe alone. A worker killed after the ping went out (a crash, the
    OOM killer) never answers, and its end of the pipe stays open in this process, so
    uvicorn noticed the death only when the health check timed out: 30 s in which the
    slot's connections queued with no worker. Waiting on the process's sentinel too ends
    the wait when it dies.
    """
    try:
        if conn in wait([conn, sentinel], timeout):
            started: bool = conn.recv()
            return started
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    return None


class SlotProcess(Process):
    """A worker whose health check gives up as soon as the worker is dead (``answer_or_death``)."""

    def _healthcheck(self, timeout: float) -> bool | None:
        try:
            self.parent_conn.send(b"ping")
        except OSError:
            return None
        return answer_or_death(self.parent_conn, self.process.sentinel, timeout)


class SlotSupervisor(Multiprocess):
    """uvicorn's ``Multiprocess`` with worker ``i`` always serving slot ``i``'s socket.

    Only the places where uvicorn's supervisor starts or retires a worker are overridden;
    health checks, signals and the main loop are uvicorn's.
    """

    def __init__(self, config: Config) -> None:
        super().__init__(config, sockets=[])
        self.slot_sockets: list[socket.socket] = []
        for _ in range(config.workers):
            self._add_slot()

    def _add_slot(self) -> None:
        # Slot 0 takes the port first; with port 0 the others follow the port it got.
        port = self.slot_sockets[0].getsockname()[1] if self.slot_sockets else self.config.port
        self.slot_sockets.append(bind_slot_socket(self.config.host, port))

    def _start_worker(self, slot: int) -> Process:
        process = SlotProcess(self.config, [self.slot_sockets[slot]])
        process.start()
        return process

    def init_processes(self) -> None:
        for slot in range(self.processes_num):
            self.processes.append(self._start_worker(slot))

    def restart_all(self) -> None:
        """Replace each worker by a new one on the same slot, the new one ready before the old stops."""
        for slot, old_process in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new_process = self._start_worker(slot)
            if not new_process.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new_process.kill()
                new_process.join()
                if not self.should_exit.is_set():
                    logger.error(
                        "worker [%s] was not ready in time; keeping worker [%s] and aborting the restart",
                        new_process.pid,
                        old_process.pid,
                    )
                return
            old_process.terminate()
            old_process.join()
            self.processes[slot] = new_process

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for slot, process in enumerate(self.processes):
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()  # hung: it answered no health check
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # It failed before serving: the app or its settings are broken, and every
                # replacement would fail the same way.
                logger.error("worker [%s] failed to start; stopping", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            logger.info("worker [%s] died; starting another on its slot", process.pid)
            self.processes[slot] = self._start_worker(slot)

    def handle_ttin(self) -> None:
        logger.info("Received SIGTTIN, adding a worker")
        self.processes_num += 1
        self._add_slot()
        self.processes.append(self._start_worker(len(self.processes)))

    def handle_ttou(self) -> None:
        if self.processes_num <= 1:
            logger.info("Received SIGTTOU with one worker left; keeping it")
            return
        logger.info("Received SIGTTOU, removing a worker")
        self.processes_num -= 1
        process = self.processes.pop()
        process.terminate()
        process.join()
        # Closed only now: while the worker was stopping, its socket still took connections.
        self.slot_sockets.pop().close()

    def run(self) -> None:
        try:
            super().run()
        finally:
            for sock in self.slot_sockets:
                sock.close()
