"""Group commit: concurrent writes of one process share one SQLite write transaction.

SQLite commits one transaction at a time, and a commit costs about as much as the rows it
writes: each page the transaction dirtied goes to the log whole (a message to 50
subscribers dirties ~100 index pages). Writers that arrive while another is writing would
otherwise each pay for a commit of their own, one after the other. Here they queue: the
first becomes the leader, runs every queued write (up to ``MAX_BATCH``) in one transaction,
each in a savepoint of its own, commits once, and wakes the others with their results. A
write that fails rolls back to its savepoint, drops the events it queued and raises in its
own thread; the others commit. If the commit fails, every write of the batch raises that
error, as each would have alone. Writers that arrive during a batch form the next one,
led by the first of them.

Each write runs as ``work(tx, session)`` on the leader's session and transaction, so work
must not need its caller's session: sending prepares everything it reads beforehand
(``actions/messages.py``). Events go out after the commit, before anyone is woken.

``GroupCommit`` is SQLite's ``WriteStrategy`` (``transaction.py``): every write of the
process, grouped or not, also takes its turn in the process's ``WriterQueue``
(``locks.py``), and begins a transaction of its own (SQLite takes the write lock at BEGIN,
so a read transaction is committed first). PostgreSQL commits concurrent transactions in
parallel and needs none of this (``transaction.ParallelWrites``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.orm import Session


class WriteTransaction(Protocol):
    """What a batch needs of ``Tx`` (``db/transaction.py``, which runs batches through this module)."""

    @property
    def events(self) -> list[Any]: ...


class Turns(Protocol):
    """What this needs of the process's writers' queue (``locks.WriterQueue``)."""

    def acquire(self) -> bool: ...

    def release(self) -> None: ...


T = TypeVar("T")
TxT = TypeVar("TxT", bound=WriteTransaction)
Work = Callable[[TxT, Session], T]

# Writes committed together at most: a batch is one transaction, and writers queued behind
# a large one wait for all of it.
MAX_BATCH = 32


class _Job(Generic[TxT, T]):
    __slots__ = ("error", "lead", "result", "wake", "work")

    def __init__(self, work: Work[TxT, T]) -> None:
        self.work = work
        self.wake = threading.Event()
        # Woken to lead the next batch rather than because the write is done.
        self.lead = False
        self.result: T | None = None
        self.error: BaseException | None = None

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # set by the batch that ran it


class GroupCommit(Generic[TxT]):
    """SQLite's write strategy: the queue of one process's grouped writes, and the turns of
    all its writers."""

    continues_reads = False

    def __init__(self, transaction: Callable[[Session], AbstractContextManager[TxT]], writers: Turns) -> None:
        self._transaction = transaction
        self._writers = writers
        self._mutex = threading.Lock()
        self._queue: list[_Job[TxT, Any]] = []
        # Whether a leader is running a batch; while it is, new writers wait in the queue.
        self._leading = False
        self.batches = 0
        self.writes = 0

    @contextmanager
    def turn(self) -> Iterator[None]:
        # False after the queue's timeout: the writer goes on to SQLite's own lock, and
        # must not release a turn it does not hold.
        queued = self._writers.acquire()
        try:
            yield
        finally:
            if queued:
                self._writers.release()

    def grouped_write(self, session: Session, work: Work[TxT, T]) -> T:
        if session.in_transaction():
            # What ``transaction()`` does first: the read snapshot ends before waiting.
            session.commit()
        job: _Job[TxT, T] = _Job(work)
        with self._mutex:
            self._queue.append(job)
            lead = not self._leading
            self._leading = True
        if not lead:
            job.wake.wait()
            if not job.lead:
                return job.outcome()
        self._lead(session)
        return job.outcome()

    def _lead(self, session: Session) -> None:
        with self._mutex:
            # The leader's own write is first in the queue: it queued while no batch ran, or
            # it was woken as the head of the queue.
            batch = self._queue[:MAX_BATCH]
            del self._queue[:MAX_BATCH]
        try:
            self._run_batch(session, batch)
        finally:
            for job in batch:
                job.wake.set()
            with self._mutex:
                if self._queue:
                    head = self._queue[0]
                    head.lead = True
                    head.wake.set()
                else:
                    self._leading = False

    def _run_batch(self, session: Session, batch: list[_Job[TxT, Any]]) -> None:
        self.batches += 1
        self.writes += len(batch)
        try:
            with self._transaction(session) as tx:
                if len(batch) == 1:
                    # Alone, a write needs no savepoint (SAVEPOINT and RELEASE were ~10 % of
                    # a sequential send's CPU): if it fails, the transaction rolls back with
                    # its events, which is all its savepoint would have undone.
                    batch[0].result = batch[0].work(tx, session)
                    return
                for job in batch:
                    queued = len(tx.events)
                    try:
                        with session.begin_nested():
                            job.result = job.work(tx, session)
                    except Exception as error:
                        del tx.events[queued:]
                        job.error = error
        except BaseException as error:
            # Nothing of the batch committed: the writes that had succeeded fail with it.
            for job in batch:
                if job.error is None:
                    job.result, job.error = None, error
            if not isinstance(error, Exception):
                raise
