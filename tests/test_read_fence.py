"""Read-your-writes fences (read_fence.py): in memory, shared through Redis, safe without it."""

from __future__ import annotations

import secrets
import time

from palaver.db.read_fence import WriteFence, fence_key_prefix
from tests import helpers
from tests.servers import free_port


def test_a_fence_holds_the_writer_only_for_its_time() -> None:
    fence = WriteFence(0.05)
    fence.mark(7)
    assert fence.holds(7)
    assert not fence.holds(8)
    # The one real sleep: the fence is a span of monotonic time.
    time.sleep(0.06)
    assert not fence.holds(7)


def test_a_fence_of_zero_seconds_never_holds() -> None:
    fence = WriteFence(0)
    fence.mark(7)
    assert not fence.holds(7)


def test_a_fence_set_by_one_process_holds_on_another() -> None:
    url = helpers.require_redis()
    prefix = f"{fence_key_prefix('postgresql+psycopg://test/fence')}{secrets.token_hex(4)}:"
    writer, reader = WriteFence(5, url, prefix), WriteFence(5, url, prefix)
    try:
        assert not reader.holds(7)
        writer.mark(7)
        assert reader.holds(7)
        assert not reader.holds(8)
    finally:
        writer.close()
        reader.close()


def test_without_redis_reads_go_to_the_primary() -> None:
    # Nothing listens on this port: the fence cannot be read, so it holds (never stale).
    fence = WriteFence(5, f"redis://127.0.0.1:{free_port()}/0", "palaver:test:read-fence:")
    try:
        fence.mark(7)  # logged, not raised: the write has committed
        assert fence.holds(8)
    finally:
        fence.close()


def test_every_redis_key_of_a_database_shares_its_namespace() -> None:
    from palaver.cache.transport import channel_name
    from palaver.config import redis_namespace
    from palaver.events.redis_backend import RedisQueueBackend

    url = "postgresql+psycopg://test/namespace"
    namespace = redis_namespace(url)
    names = [channel_name(url), fence_key_prefix(url), RedisQueueBackend.default_key_prefix(url)]
    assert all(name.startswith(namespace) for name in names)
    assert len(set(names)) == 3
    assert redis_namespace("postgresql+psycopg://test/other") != namespace
