"""Rate limiting: one contract for the in-memory and Redis limiters, and the API's 429s."""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from palaver.app import create_app
from palaver.config import RateLimit
from palaver.lib import rate_limit
from palaver.lib.rate_limit import MemoryRateLimiter, NoRateLimiter, RateLimiter, RedisRateLimiter
from palaver.migrate import upgrade
from palaver.services import Services, build_services
from tests import helpers
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import (
    SeededRealm,
    assert_json_error,
    assert_json_success,
    basic_auth,
    require_redis,
    seed_realm,
)

REDIS_URL = helpers.REDIS_URL


class FakeClock:
    """Stands in for the ``time`` module inside palaver.lib.rate_limit."""

    def __init__(self) -> None:
        # A random, window-aligned epoch. Redis keys hold a sliding log of hit times under
        # the key's name, so tests sharing a key must not share Redis: each uses a key (or,
        # through the API, a client address) of its own.
        self.now = float(random.randrange(10**9, 2 * 10**9) // 3600 * 3600)

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(rate_limit, "time", fake)
    return fake


def redis_limiter() -> RedisRateLimiter:
    return RedisRateLimiter(require_redis(REDIS_URL))


@pytest.fixture(params=["memory", "redis"])
def limiter(request: pytest.FixtureRequest) -> RateLimiter:
    if request.param == "memory":
        return MemoryRateLimiter()
    return redis_limiter()


@pytest.fixture
def key() -> str:
    return f"test:{uuid.uuid4().hex}"


RULE = RateLimit(count=3, seconds=60)


# -- The contract both backends keep ---------------------------------------------------------


def test_allows_count_hits_per_window_then_denies(limiter: RateLimiter, key: str, clock: FakeClock) -> None:
    clock.advance(10)
    first = clock.now
    results = [limiter.hit(key, RULE) for _ in range(5)]
    assert [r.allowed for r in results] == [True, True, True, False, False]
    assert [r.remaining for r in results] == [2, 1, 0, 0, 0]
    assert {r.limit for r in results} == {3}
    # A slot frees when the oldest counted request is a window old.
    assert {r.reset_at for r in results} == {first + 60}
    assert results[-1].retry_after == pytest.approx(60)


def test_slots_free_as_requests_age_out(limiter: RateLimiter, key: str, clock: FakeClock) -> None:
    limiter.hit(key, RULE)
    clock.advance(20)
    limiter.hit(key, RULE)
    limiter.hit(key, RULE)
    assert not limiter.hit(key, RULE).allowed
    clock.advance(39.9)
    assert not limiter.hit(key, RULE).allowed
    clock.advance(0.1)
    # Only the first request has left the window: one slot, not a fresh budget.
    result = limiter.hit(key, RULE)
    assert (result.allowed, result.remaining) == (True, 0)
    assert not limiter.hit(key, RULE).allowed
    clock.advance(20)
    # Both requests made at 20 s have left; the one made at 60 s still counts.
    result = limiter.hit(key, RULE)
    assert (result.allowed, result.remaining) == (True, 1)


def test_no_burst_of_twice_the_limit_at_a_window_edge(
    limiter: RateLimiter, key: str, clock: FakeClock
) -> None:
    """A fixed window lets ``count`` through just before its end and ``count`` more just
    after; a sliding one allows ``count`` in any window-long stretch."""
    clock.advance(59)
    assert [limiter.hit(key, RULE).allowed for _ in range(3)] == [True, True, True]
    clock.advance(2)
    assert [limiter.hit(key, RULE).allowed for _ in range(3)] == [False, False, False]


def test_keys_are_independent(limiter: RateLimiter, key: str, clock: FakeClock) -> None:
    for _ in range(3):
        limiter.hit(key, RULE)
    assert not limiter.hit(key, RULE).allowed
    assert limiter.hit(key + ":other", RULE).allowed


def test_rules_of_different_windows_count_separately(
    limiter: RateLimiter, key: str, clock: FakeClock
) -> None:
    short, long = RateLimit(count=1, seconds=60), RateLimit(count=1, seconds=3600)
    assert limiter.hit(key, short).allowed
    assert limiter.hit(key, long).allowed
    assert not limiter.hit(key, short).allowed
    assert not limiter.hit(key, long).allowed


def test_clear_forgets_the_current_window(limiter: RateLimiter, key: str, clock: FakeClock) -> None:
    for _ in range(4):
        limiter.hit(key, RULE)
    limiter.clear(key, RULE)
    assert limiter.hit(key, RULE).remaining == 2
    limiter.clear(key + ":never-hit", RULE)


def test_concurrent_hits_are_counted_exactly(limiter: RateLimiter, key: str, clock: FakeClock) -> None:
    rule = RateLimit(count=25, seconds=60)
    allowed: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            result = limiter.hit(key, rule)
            with lock:
                allowed.append(result.allowed)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (allowed.count(True), len(allowed)) == (25, 80)


def test_no_rate_limiter_always_allows(key: str) -> None:
    limiter = NoRateLimiter()
    results = [limiter.hit(key, RULE) for _ in range(10)]
    assert all(r.allowed and r.remaining == 3 for r in results)


# -- Backend specifics -----------------------------------------------------------------------


def test_redis_outage_falls_back_to_counting_per_process(
    key: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Port 1 refuses connections: the limiter must neither raise nor refuse everything.
    limiter = RedisRateLimiter("redis://127.0.0.1:1/0", timeout=0.2)
    rule = RateLimit(count=2, seconds=60)
    with caplog.at_level(logging.WARNING, logger="palaver.lib.rate_limit"):
        results = [limiter.hit(key, rule) for _ in range(3)]
    assert [r.allowed for r in results] == [True, True, False]
    assert [r.remaining for r in results] == [1, 0, 0]
    # One warning per interval, not one per request.
    assert caplog.text.count("Redis unavailable") == 1
    limiter.clear(key, rule)
    assert limiter.hit(key, rule).allowed


def test_memory_sweep_keeps_live_windows_of_longer_rules(key: str, clock: FakeClock) -> None:
    limiter = MemoryRateLimiter(max_entries=10)
    login = RateLimit(count=1, seconds=1800)
    assert limiter.hit(key, login).allowed
    clock.advance(120)
    # Many short-window keys trigger a sweep; the login window is still open.
    for i in range(20):
        limiter.hit(f"{key}:{i}", RateLimit(count=5, seconds=60))
    assert not limiter.hit(key, login).allowed


def test_memory_sweep_drops_ended_windows(key: str, clock: FakeClock) -> None:
    limiter = MemoryRateLimiter(max_entries=10)
    for i in range(11):
        limiter.hit(f"{key}:{i}", RateLimit(count=5, seconds=60))
    clock.advance(60)
    limiter.hit(f"{key}:new", RateLimit(count=5, seconds=60))
    assert len(limiter._logs) == 1  # white-box: the memory is what this test is about


def test_memory_sweeps_are_amortised_when_every_window_is_live(
    key: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter = MemoryRateLimiter(max_entries=10)
    sweeps: list[int] = []
    sweep = limiter._sweep

    def counting_sweep(now: float) -> None:
        sweeps.append(len(limiter._logs))
        sweep(now)

    monkeypatch.setattr(limiter, "_sweep", counting_sweep)
    for i in range(200):
        limiter.hit(f"{key}:{i}", RateLimit(count=5, seconds=60))
    # Each sweep that finds only live windows doubles the threshold: five sweeps in 200 hits,
    # rather than one per request once the table is past its size.
    assert sweeps == [11, 23, 47, 95, 191]


def test_redis_keys_expire_with_their_window(key: str, clock: FakeClock) -> None:
    limiter = redis_limiter()
    limiter.hit(key, RULE)
    names = list(limiter._redis.scan_iter(f"palaver:ratelimit:{key}:*"))
    assert len(names) == 1
    assert 0 < limiter._redis.ttl(names[0]) <= RULE.seconds + 1
    assert limiter._redis.zcard(names[0]) == 1
    limiter.clear(key, RULE)
    assert list(limiter._redis.scan_iter(f"palaver:ratelimit:{key}:*")) == []


# -- Through the API -------------------------------------------------------------------------


@pytest.fixture(params=["memory", "redis"])
def limited(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, clock: FakeClock
) -> Iterator[tuple[TestClient, SeededRealm, Services]]:
    settings = make_test_settings(database_url, tmp_path, api_rate_limit="3/60")
    services = build_services(settings)
    if request.param == "redis":
        services.rate_limiter = redis_limiter()
    upgrade(services.db.engine)
    realm = seed_realm(services)
    # No lifespan: these services are the test's own, closed below. A client address of its
    # own: Redis keys name the address, not the window, and another test's fake clock (or
    # another suite's, on the same Redis) leaves hits at other times under the same key.
    address = f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"
    client = TestClient(
        create_app(settings, services), base_url="http://palaver.test", client=(address, 50000)
    )
    yield client, realm, services
    client.close()
    services.close()


Get = Callable[..., Any]


def getter(client: TestClient, realm: SeededRealm) -> Get:
    def get(path: str, user: Any = None, **kw: Any) -> Any:
        headers = {"host": realm.host}
        if user is not None:
            headers["authorization"] = basic_auth(user)
        return client.get(f"/api/v1/{path}", headers=headers, **kw)

    return get


def test_api_rate_limit_per_user(limited: tuple[TestClient, SeededRealm, Services], clock: FakeClock) -> None:
    client, realm, _ = limited
    get = getter(client, realm)
    clock.advance(20)
    # The first request leaves the window a minute after it was made.
    reset = int(clock.now) + 60
    for remaining in (2, 1, 0):
        response = get("users/me", realm.hamlet)
        assert_json_success(response)
        assert response.headers["X-RateLimit-Limit"] == "3"
        assert response.headers["X-RateLimit-Remaining"] == str(remaining)
        assert response.headers["X-RateLimit-Reset"] == str(reset)
        clock.advance(10)

    response = get("users/me", realm.hamlet)
    body = assert_json_error(response, "API usage exceeded rate limit", 429, code="RATE_LIMIT_HIT")
    assert body["retry-after"] == pytest.approx(30)
    assert response.headers["Retry-After"] == "30"
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    assert response.headers["X-RateLimit-Reset"] == str(reset)

    # Another user has a budget of their own.
    assert_json_success(get("users/me", realm.othello))

    clock.advance(30)
    response = get("users/me", realm.hamlet)
    assert_json_success(response)
    assert response.headers["X-RateLimit-Remaining"] == "0"


def test_retry_after_rounds_up(limited: tuple[TestClient, SeededRealm, Services], clock: FakeClock) -> None:
    client, realm, _ = limited
    get = getter(client, realm)
    for _ in range(3):
        get("users/me", realm.hamlet)
    clock.advance(59.5)
    response = get("users/me", realm.hamlet)
    assert response.status_code == 429
    assert response.json()["retry-after"] == pytest.approx(0.5)
    assert response.headers["Retry-After"] == "1"


def test_error_responses_count_and_carry_headers(limited: tuple[TestClient, SeededRealm, Services]) -> None:
    client, realm, _ = limited
    get = getter(client, realm)
    response = get("users", realm.hamlet, params={"user_ids": "nope"})
    assert_json_error(response, 'Argument "user_ids" is not valid JSON.')
    assert response.headers["X-RateLimit-Remaining"] == "2"


def test_unauthenticated_requests_are_limited_per_client_address(
    limited: tuple[TestClient, SeededRealm, Services],
) -> None:
    client, realm, _ = limited
    get = getter(client, realm)
    for _ in range(3):
        assert_json_success(get("server_settings"))
    assert_json_error(get("server_settings"), "API usage exceeded rate limit", 429, code="RATE_LIMIT_HIT")
    # Authenticated users are counted by account, not by address.
    assert_json_success(get("users/me", realm.hamlet))


def test_rejected_credentials_do_not_use_the_account_budget(
    limited: tuple[TestClient, SeededRealm, Services],
) -> None:
    client, realm, _ = limited
    get = getter(client, realm)
    bad = {"host": realm.host, "authorization": "Basic bm9ib2R5Om5vcGU="}
    for _ in range(5):
        assert client.get("/api/v1/users/me", headers=bad).status_code == 401
    assert get("users/me", realm.hamlet).headers["X-RateLimit-Remaining"] == "2"
