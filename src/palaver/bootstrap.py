"""Start-up work shared by the CLI: migrations, the demo organization, running uvicorn.

The app, the demo organization (which runs actions) and uvicorn are imported only by the
functions that serve: one-off commands (``migrate``, ``open_services``) start without them.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from sqlalchemy import func, select

from palaver.config import Settings
from palaver.lib.dependencies import wait_for_dependencies
from palaver.lib.logs import configure_logging
from palaver.lib.metrics import prepare_multiprocess_dir
from palaver.models import Realm
from palaver.services import Services, build_services
from palaver.serving import uvicorn_options


def migrate_database(settings: Settings) -> None:
    # Alembic (with Mako, Pygments and the migration scripts, ~11 MiB) only where it runs.
    from palaver.migrate import upgrade

    services = build_services(settings)
    try:
        upgrade(services.db.engine)
    finally:
        services.close()


@contextmanager
def open_services(settings: Settings) -> Iterator[Services]:
    """Services for a one-off command, on an up-to-date schema. Its changes reach running
    servers (their caches, credentials and clients) as a server's own would (``one_off``)."""
    from palaver.migrate import upgrade  # see migrate_database

    services = build_services(settings, one_off=True)
    try:
        upgrade(services.db.engine)
        yield services
    finally:
        services.close()


def prepare_for_serving(settings: Settings, out: TextIO) -> None:
    # PostgreSQL and Redis may still be starting (containers, boot): wait, then give up.
    wait_for_dependencies(settings)
    # Migrating imports Alembic and the migration scripts, and a demo organization the
    # actions: an idle server needs neither, and a module once imported stays in memory. A
    # forked child does that work; the server process goes on without them.
    in_forked_child(_migrate_and_seed_demo, settings, out)
    # An IPv6 literal needs brackets, or the port reads as part of the address.
    bind = f"[{settings.host}]" if ":" in settings.host else settings.host
    listening = f"http://{bind}:{settings.port}"
    where = settings.external_url
    if where != listening:
        where += f" (listening on {bind}:{settings.port})"
    out.write(f"Palaver is serving on {where}\n")
    out.write(f"Web client: open {settings.external_url}/ in a browser and log in.\n")
    out.flush()


def _migrate_and_seed_demo(settings: Settings, out: TextIO) -> None:
    from palaver.demo import create_demo_realm, describe_demo

    with open_services(settings) as services, services.db.session() as session:
        empty = not session.scalar(select(func.count()).select_from(Realm))
        if empty and settings.create_demo_realm:
            demo = create_demo_realm(services, session)
            describe_demo(settings, demo, out)
    out.flush()


def in_forked_child(func: Callable[..., None], *args: object) -> None:
    """Run ``func(*args)`` in a forked child process and wait for it.

    Whatever the child imports or allocates is gone with it. An exception it raises is
    raised here (the same one, pickled back through a pipe), so callers report errors as
    if the function had run in this process. Only for single-threaded callers: fork copies
    this thread alone.
    """
    # Else what this process has buffered would be written twice, once by the child.
    sys.stdout.flush()
    sys.stderr.flush()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(reader)
        payload = b""
        try:
            func(*args)
        except BaseException as error:
            try:
                payload = pickle.dumps(error)
            except Exception:
                payload = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
        finally:
            with os.fdopen(writer, "wb") as pipe:
                pipe.write(payload)
            sys.stdout.flush()
            sys.stderr.flush()
            # No exit handlers or finalizers: they are the parent's to run.
            os._exit(1 if payload else 0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if payload:
        raise pickle.loads(payload)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"start-up child process failed ({os.waitstatus_to_exitcode(status)})")


# Python starts a full collection whenever the objects promoted since the last one exceed a
# quarter of the long-lived heap. A server promotes every parked long-poll's objects (they
# outlive two young collections) and frees them by reference counting a second later, so
# under load that rule fired several times a second, each pass walking the whole heap
# (about 150 ms at 1,300 users in bench/mix.py) to find a hundred-odd cyclic objects: 8 % of
# the CPU and a stall each time. Full collections run on a clock instead.
FULL_COLLECTION_SECONDS = 60.0
# The third threshold counts second-generation collections (about ten a second under
# load): this many is decades.
_NEVER = 1 << 30


def tune_gc_for_serving(full_collection_seconds: float = FULL_COLLECTION_SECONDS) -> Callable[[], None]:
    """Make the garbage collector cheaper for a long-running server; call once the app is built.

    Freezing moves everything alive at start-up (modules, the app, its routes) out of the
    collector's reach, so full collections do not re-walk it. Full collections then run every
    ``full_collection_seconds`` from a daemon thread rather than by Python's promotion rule
    (above); cyclic garbage that reached the oldest generation waits at most that long. A
    larger first-generation threshold was tried too: it helped a large /register a little
    but made every message send 30-40 % dearer (bench/send_messages.py), so the young generations
    keep Python's defaults. Only for serving: a test process builds many apps, and frozen
    objects are never collected. Returns a function that stops the clock (for tests).
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)
    stop = threading.Event()

    def collect_on_a_clock() -> None:
        while not stop.wait(full_collection_seconds):
            gc.collect()

    threading.Thread(target=collect_on_a_clock, name="palaver-full-gc", daemon=True).start()
    return stop.set


# glibc's malloc gives each new thread an arena of its own, up to eight per core, and what a
# thread frees stays in its arena for that arena's threads. The server's worker threads (anyio's
# pool, up to 40) each kept some that way: capped at two arenas, an idle server after a burst
# of 16 requests holds about 1.5 MiB less (bench/queue_memory.py), and the memory the pool's
# threads free is shared by all of them. Two, not one: the event loop's thread and the worker
# threads, which allocate with the GIL released (SQLite), need not share one lock.
MALLOC_ARENAS = 2
# mallopt's parameter number for the arena limit (glibc's malloc.h).
_M_ARENA_MAX = -8


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads this process starts from now on (so: before
    serving) and for the processes it starts (``MALLOC_ARENA_MAX``). An operator's own
    ``MALLOC_ARENA_MAX`` stands (glibc read it at start); another C library is left alone.
    True when the cap was set here."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = None
    if not glibc:
        return False
    import ctypes

    if ctypes.CDLL(None).mallopt(_M_ARENA_MAX, arenas) != 1:
        return False
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    return True


def run_server(settings: Settings, config_file: str | None) -> None:
    import uvicorn

    limit_malloc_arenas()
    configure_logging(settings)
    options = uvicorn_options(settings)
    if settings.workers == 1:
        from palaver.app import create_app

        app = create_app(settings)
        tune_gc_for_serving()
        uvicorn.run(app, **options)
        return
    # Workers add their metrics up through files in a directory the server empties at start.
    prepare_multiprocess_dir(settings.data_dir)
    # Worker processes import the app by name and read the same settings from the environment.
    os.environ["PALAVER_SETTINGS_JSON"] = settings.model_dump_json()
    if config_file:
        os.environ["PALAVER_CONFIG"] = config_file
    from palaver.supervisor import Supervisor

    config = uvicorn.Config(
        "palaver.asgi:create_app_from_environment", factory=True, workers=settings.workers, **options
    )
    # The workers are forked from a process that has imported worker_modules() once.
    exit_code = Supervisor(config, preload=worker_modules()).run()
    if exit_code:
        raise SystemExit(exit_code)


def worker_modules() -> list[str]:
    """What a worker imports on its way to its first answer, for its fork server to preload.

    Building the app imports every API module (``discover_routers``: 59 of them, 93 modules
    with what they import, each view's parameter validators built as its module loads), and
    the first request imports anyio's asyncio backend.
    Imported after the fork, that was ~0.5 s of CPU in every worker (and in every
    replacement), in memory each worker held alone; imported before, the workers share it.
    Several workers always have Redis (``palaver serve`` refuses them without it), so its
    queue backend and redis-py are preloaded too, though a process without Redis never
    imports them; so is what renders math, which a single process loads on first use.
    """
    from palaver.api import api_module_names

    shared_once = ["palaver.events.redis_backend", "latex2mathml.converter"]
    return ["palaver.asgi", "anyio._backends._asyncio", *shared_once, *api_module_names()]
