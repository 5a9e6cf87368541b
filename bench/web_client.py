"""The web client in headless Chromium: login to a usable feed, narrow switches, live delivery.

Run: .venv/bin/python bench/web_client.py [--small] [--messages N] [--users N] [--channels N]
                                          [--deliveries 100] [--scroll-back 5000]

Makes an organization on the root domain with the CLI (owner plus a second person, both
with passwords), fills it with ``palaver seed-users`` and ``palaver seed-messages`` (the
issue's sizes by default: 10,000 users, 1,000 channels, 1,000,000 messages; ``--small``
seeds 1,000 / 100 / 50,000 and says so), starts ``palaver serve``, and drives Debian's
Chromium (/usr/bin/chromium) with Playwright:

1. login to usable feed: from pressing "Log in" to the first message rows shown with the
   feed no longer busy (``#feed [data-id]``, ``#feed-scroller[aria-busy=false]``);
2. narrow switch: setting ``location.hash`` to a channel narrow until its rows are shown;
3. live delivery: page A posts through /json/messages, page B (another browser context,
   the second person) shows it; measured with ``Date.now()`` in both pages (one browser,
   one clock) via a MutationObserver, p50/p99;
4. first-load bytes: JavaScript and CSS as transferred (compressed) on the first load;
5. memory: JS heap and DOM nodes after scrolling back through ``--scroll-back`` messages;
6. a page left open on live traffic: a fresh page of the second person reading the newest
   messages of the busy channel while ``--live-hours`` of traffic at one message every
   ``--live-interval`` seconds (7,200 messages by default) is sent through the API as fast
   as the server takes it, in 24 topics; then its JS heap after a garbage collection, its
   DOM nodes and its renderer process's resident memory (``/proc``; Chromium names the
   process through CDP's ``SystemInfo.getProcessInfo``). Only the traffic is accelerated:
   the page's own timers (presence pings, long-poll renewals) run in real time.

Selectors are the web client's (src/palaver/web/static/app/views/feed.js); if they change,
update ``FEED_ROW`` and ``FEED_READY``. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import LOOPBACK, free_port, palaver, rss_bytes, run_cli, server_env
from users_me import running

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
FEED_ROW = "#feed [data-id]"
FEED_READY = "#feed-scroller[aria-busy=false]"
USABLE_FEED = f"{FEED_READY} {FEED_ROW}"
TARGETS = {
    "login_s": 1.0,
    "narrow_ms": 150,
    "p50_ms": 150,
    "p99_ms": 400,
    "heap_mb": 300,
    "bytes_kb": 250,
    "live_mb": 300,
}
LIVE_TOPICS = 24
TO_BOTTOM_JS = "() => { const s = document.querySelector('#feed-scroller'); s.scrollTop = s.scrollHeight; }"

# Installed in page B before each send: notes when a row with the marker text appears.
WATCH_JS = """marker => {
  window.__benchShown = 0;
  const found = () => [...document.querySelectorAll('#feed [data-id]')]
    .find(el => el.textContent.includes(marker));
  const observer = new MutationObserver(() => {
    if (found()) { observer.disconnect(); window.__benchShown = Date.now(); }
  });
  observer.observe(document.body, {childList: true, subtree: true, characterData: true});
}"""

SEND_JS = """async ([channel, topic, content]) => {
  const csrf = document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1];
  const sent = Date.now();
  const body = new URLSearchParams({type: 'stream', to: channel, topic, content});
  const response = await fetch('/json/messages', {method: 'POST', body, headers: {'X-CSRFToken': csrf}});
  if (!response.ok) throw new Error(await response.text());
  return sent;
}"""


def step(text: str) -> None:
    print(f"== {text}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def seed(env: dict[str, str], args: argparse.Namespace) -> tuple[str, str]:
    """The owner's and the second person's emails; both have the password ``args.password``."""
    owner, second = "owner@example.com", "second@example.com"
    run_cli(
        env,
        "create-realm",
        "--name",
        "Web bench",
        "--string-id",
        "",
        "--owner-email",
        owner,
        "--owner-name",
        "Bench Owner",
        f"--password={args.password}",
        timeout=120,
    )
    run_cli(
        env,
        "create-user",
        "--realm",
        "",
        "--email",
        second,
        "--full-name",
        "Second Person",
        f"--password={args.password}",
        timeout=120,
    )
    started = time.monotonic()
    print(
        run_cli(
            env, "seed-users", "--realm", "", "--users", str(args.users), "--channels", str(args.channels)
        )
    )
    # The first --subscribers humans (the owner and the second person first) receive
    # every channel message, so both feeds are full.
    print(
        run_cli(
            env,
            "seed-messages",
            "--realm",
            "",
            "--messages",
            str(args.messages),
            "--subscribers",
            "10",
            "--quiet",
            timeout=7200,
        ).strip(),
        f"(seeding took {time.monotonic() - started:.0f} s)",
    )
    return owner, second


def log_in(page: Any, url: str, email: str, password: str) -> float:
    return timed_log_in(page, url, email, password)[0]


def timed_log_in(page: Any, url: str, email: str, password: str) -> tuple[float, float]:
    """The seconds from pressing "Log in" to a usable feed, and when it was pressed (ms
    since the epoch)."""
    page.goto(url + "/")
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    clicked = time.time() * 1000
    started = time.perf_counter()
    page.click("button[type=submit]")
    # One wait for both (a row shown in a feed no longer busy): a second wait after the first
    # measured a protocol round trip that queues behind the page's idle-time work.
    page.wait_for_selector(USABLE_FEED, timeout=60_000)
    return time.perf_counter() - started, clicked


# The app's marks (main.js) and the page's own milestones, in ms since the epoch.
MARKS_JS = """() => {
  const at = (ms) => Math.round(performance.timeOrigin + ms);
  const nav = performance.getEntriesByType('navigation')[0];
  const marks = { response: at(nav.responseStart), dom: at(nav.domContentLoadedEventEnd) };
  for (const m of performance.getEntriesByType('mark')) {
    if (m.name.startsWith('palaver:')) marks[m.name.slice(8)] = at(m.startTime);
  }
  return marks;
}"""


# Notes (window.__benchReady, ms since the epoch) when the page first shows what log_in
# waits for, so the wait's own delay (a busy main thread, the protocol's round trips) is
# told apart from the page's.
READY_JS = f"""new MutationObserver((_, observer) => {{
  if (document.querySelector('{FEED_ROW}') && document.querySelector('{FEED_READY}')) {{
    window.__benchReady = Date.now();
    observer.disconnect();
  }}
}}).observe(document, {{ subtree: true, childList: true, attributes: true }});"""


def warm_logins(
    browser: Any, url: str, email: str, password: str, count: int
) -> list[tuple[float, dict[str, int]]]:
    """``count`` logins, each in a fresh context: the time of each, and the page's marks in
    ms from pressing "Log in" (``response``: the app's HTML arriving after the login's
    redirect; ``dom``: its scripts parsed; ``registered``, ``state``, ``feed``, ``users``:
    main.js; ``ready``: the page first showing what ``log_in`` waits for)."""
    runs = []
    for _ in range(count):
        context = browser.new_context()
        context.add_init_script(READY_JS)
        page = context.new_page()
        seconds, clicked = timed_log_in(page, url, email, password)
        # The user list (the second phase) may still be on its way: its mark, if it came.
        page.wait_for_timeout(1500)
        marks = {name: round(at - clicked) for name, at in page.evaluate(MARKS_JS).items()}
        marks["ready"] = round(page.evaluate("window.__benchReady || NaN") - clicked)
        runs.append((seconds, marks))
        context.close()
    return runs


def channel_ids(url: str, email: str, password: str) -> list[tuple[int, str]]:
    """The channels ``seed-messages`` filled (``seed channel 0`` to ``9``), in that order."""
    key = httpx.post(
        f"{url}/api/v1/fetch_api_key",
        data={"username": email, "password": password},
        trust_env=False,
        timeout=120,
    ).json()["api_key"]
    subs = httpx.get(
        f"{url}/api/v1/users/me/subscriptions", auth=(email, key), trust_env=False, timeout=120
    ).json()
    by_name = {s["name"]: s["stream_id"] for s in subs["subscriptions"]}
    return [
        (by_name[f"seed channel {i}"], f"seed channel {i}")
        for i in range(10)
        if f"seed channel {i}" in by_name
    ]


def newest_id(url: str, email: str, password: str, stream_id: int) -> int:
    key = httpx.post(
        f"{url}/api/v1/fetch_api_key", data={"username": email, "password": password}, trust_env=False
    ).json()["api_key"]
    narrow = json.dumps([{"operator": "channel", "operand": stream_id}])
    params = {"anchor": "newest", "num_before": "1", "num_after": "0", "narrow": narrow}
    got = httpx.get(f"{url}/api/v1/messages", params=params, auth=(email, key), trust_env=False, timeout=120)
    return int(got.json()["messages"][-1]["id"])


def channel_hash(stream_id: int, name: str) -> str:
    return f"#narrow/channel/{stream_id}-{name.replace(' ', '-')}"


def narrow_switches(page: Any, channels: list[tuple[int, str]], count: int) -> list[float]:
    times = []
    for i in range(count):
        stream_id, name = channels[i % len(channels)]
        # Leave the narrow first so each switch fetches and renders anew.
        page.evaluate("() => { location.hash = '#narrow/is/starred'; }")
        page.wait_for_selector(FEED_READY, state="attached")
        started = time.perf_counter()
        page.evaluate("h => { location.hash = h; }", channel_hash(stream_id, name))
        page.wait_for_function(
            "title => document.querySelector('#narrow-title')?.textContent.includes(title)"
            " && document.querySelector('#feed [data-id]')"
            " && document.querySelector('#feed-scroller')?.getAttribute('aria-busy') === 'false'",
            arg=name,
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


def deliveries(sender: Any, receiver: Any, channel: str, topic: str, count: int) -> tuple[list[float], int]:
    """Latencies of the messages page B showed, and how many it did not show within 10 s."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    latencies, missed = [], 0
    for i in range(count):
        marker = f"bench-{secrets.token_hex(6)}"
        receiver.evaluate(WATCH_JS, marker)
        sent = sender.evaluate(SEND_JS, [channel, topic, f"{marker} {i}"])
        try:
            shown = receiver.wait_for_function("() => window.__benchShown", timeout=10_000).json_value()
        except PlaywrightTimeout:
            missed += 1
            continue
        latencies.append(float(shown) - float(sent))
    return latencies, missed


def scroll_back(page: Any, target: int, timeout: float = 300) -> tuple[int, int, float, int]:
    """Scroll up until ``target`` messages were fetched; (fetched, rows, JS heap MB, DOM nodes).

    Counted from the /json/messages answers, as the client may keep only some rows in the DOM.
    Stops early when 100 scrolls in a row fetch nothing.
    """
    fetched = {"count": 0, "oldest": False}

    def note(response: Any) -> None:
        if "/json/messages?" in response.url and response.request.method == "GET" and response.ok:
            body = response.json()
            fetched["count"] += len(body.get("messages", []))
            fetched["oldest"] = fetched["oldest"] or bool(body.get("found_oldest"))

    page.on("response", note)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    deadline = time.monotonic() + timeout
    idle = 0
    while time.monotonic() < deadline and fetched["count"] < target and not fetched["oldest"] and idle < 100:
        before = fetched["count"]
        page.evaluate("() => { document.querySelector('#feed-scroller').scrollTop = 0; }")
        page.wait_for_timeout(30)
        page.wait_for_selector(FEED_READY, state="attached")
        idle = 0 if fetched["count"] > before else idle + 1
    page.remove_listener("response", note)
    rows = page.evaluate("() => document.querySelectorAll('#feed [data-id]').length")
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return int(fetched["count"]), rows, metrics.get("JSHeapUsedSize", 0) / 2**20, int(metrics.get("Nodes", 0))


def renderer_pids(browser: Any) -> set[int]:
    cdp = browser.new_browser_cdp_session()
    try:
        info = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
    finally:
        cdp.detach()
    return {int(p["id"]) for p in info if p.get("type") == "renderer"}


def api_key(url: str, email: str, password: str) -> str:
    got = httpx.post(
        f"{url}/api/v1/fetch_api_key",
        data={"username": email, "password": password},
        trust_env=False,
        timeout=120,
    )
    return str(got.json()["api_key"])


def page_memory(page: Any, pids: set[int]) -> tuple[float, int, float]:
    """(JS heap MB after a garbage collection, DOM nodes, renderer RSS MB) of one page."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("Performance.enable")
        cdp.send("HeapProfiler.collectGarbage")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    finally:
        cdp.detach()
    rss = max((rss_bytes(pid) for pid in pids), default=0)
    return metrics.get("JSHeapUsedSize", 0) / 2**20, int(metrics.get("Nodes", 0)), rss / 2**20


def live_traffic(
    browser: Any,
    url: str,
    reader: tuple[str, str],
    sender: tuple[str, str],
    channel: tuple[int, str],
    count: int,
) -> list[tuple[int, float, int, float]]:
    """A fresh page of ``reader`` on the newest messages of ``channel`` while ``sender``
    posts ``count`` messages there; [(messages sent, JS heap MB, DOM nodes, renderer RSS MB)]
    sampled along the way, the last once the page shows the last message."""
    stream_id, name = channel
    before = renderer_pids(browser)
    context = browser.new_context()
    context.set_default_timeout(60_000)
    page = context.new_page()
    log_in(page, url, *reader)
    pids = renderer_pids(browser) - before
    near = newest_id(url, reader[0], reader[1], stream_id)
    page.evaluate("h => { location.hash = h; }", f"{channel_hash(stream_id, name)}/near/{near}")
    page.wait_for_timeout(500)
    page.wait_for_selector(FEED_READY, state="attached")
    page.evaluate(TO_BOTTOM_JS)
    key = api_key(url, *sender)
    tag = secrets.token_hex(4)
    samples = [(0, *page_memory(page, pids))]
    lock = threading.Lock()
    sent = {"n": 0}

    def send(i: int) -> None:
        body = (
            f"live {tag} {i}: a **busy** channel's message with `code` and a [link](https://example.com/{i})"
        )
        data = {"type": "stream", "to": name, "topic": f"live {tag} {i % LIVE_TOPICS}", "content": body}
        with httpx.Client(auth=(sender[0], key), trust_env=False, timeout=120) as client:
            client.post(f"{url}/api/v1/messages", data=data).raise_for_status()
        with lock:
            sent["n"] += 1

    every = max(1, count // 8)
    with ThreadPoolExecutor(max_workers=4) as pool:
        for start in range(0, count, every):
            list(pool.map(send, range(start, min(count, start + every))))
            # Keeps the page from being measured mid-render.
            page.wait_for_timeout(200)
            samples.append((sent["n"], *page_memory(page, pids)))
    last = f"live {tag} {count - 1}:"
    page.wait_for_function(
        "text => [...document.querySelectorAll('#feed [data-id]')].some(el => el.textContent.includes(text))",
        arg=last,
        timeout=120_000,
    )
    samples.append((count, *page_memory(page, pids)))
    context.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1,000 users, 100 channels, 50,000 messages")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--deliveries", type=int, default=100)
    parser.add_argument("--narrows", type=int, default=20)
    parser.add_argument("--scroll-back", type=int, default=5_000)
    parser.add_argument("--live-hours", type=float, default=2.0, help="simulated hours of traffic (0: none)")
    parser.add_argument("--live-interval", type=float, default=1.0, help="seconds between live messages")
    parser.add_argument("--password", default=secrets.token_urlsafe(12))
    parser.add_argument("--data-dir", type=Path, help="keep the seeded organization here and reuse it")
    parser.add_argument("--logins", type=int, default=1, help="warm logins (median and marks printed)")
    parser.add_argument("--login-only", action="store_true", help="measure the logins only")
    parser.add_argument("--narrow-only", action="store_true", help="stop after the narrow switches")
    args = parser.parse_args()
    if args.small:
        args.users, args.channels, args.messages = 1_000, 100, 50_000
    if not (1 <= args.deliveries <= 10_000 and 1 <= args.narrows <= 1_000 and args.channels >= 1):
        raise SystemExit("--deliveries 1-10,000, --narrows 1-1,000, --channels >= 1")
    if not 1 <= args.logins <= 100:
        raise SystemExit("--logins 1-100")
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is missing (scripts/install-chromium)")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="palaver-web-bench-"))
    try:
        port = free_port()
        url = f"http://{LOOPBACK}:{port}"
        data_dir = args.data_dir.resolve() if args.data_dir else tmp / "data"
        env = server_env(data_dir, PALAVER_EXTERNAL_URL=url, PALAVER_PORT=str(port))
        record = data_dir / "bench-web.json"
        sizes = [args.users, args.channels, args.messages]
        saved = json.loads(record.read_text()) if record.exists() else {}
        if saved.get("sizes") == sizes:
            owner, second, args.password = saved["owner"], saved["second"], saved["password"]
            step(f"reusing the organization seeded in {data_dir}")
        else:
            owner, second = seed(env, args)
            record.write_text(
                json.dumps({"sizes": sizes, "owner": owner, "second": second, "password": args.password})
            )
        with (
            running(palaver("serve"), env, tmp / "palaver.log", f"{url}/api/v1/server_settings"),
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            bytes_by_type: dict[str, int] = {"script": 0, "stylesheet": 0}

            def count(response: Any) -> None:
                kind = response.request.resource_type
                if kind in bytes_by_type:
                    bytes_by_type[kind] += int(response.headers.get("content-length") or 0)

            step("login")
            context_a = browser.new_context()
            context_a.set_default_timeout(30_000)
            page_a = context_a.new_page()
            page_a.on("response", count)
            login = log_in(page_a, url, owner, args.password)
            # Warm: fresh logins, once the server's caches hold the organization.
            runs = warm_logins(browser, url, owner, args.password, args.logins)
            warm = statistics.median(seconds for seconds, _ in runs)
            for seconds, marks in runs:
                step(f"warm login {seconds:.2f} s, marks (ms) {marks}")
            step(f"login to usable feed: first {login:.2f} s, warm {warm:.2f} s")
            if args.login_only:
                browser.close()
                print(
                    f"login to usable feed   first {login:.2f} s, warm median {warm:.2f} s over {len(runs)}"
                )
                return

            step("narrow switches")
            channels = channel_ids(url, owner, args.password)
            narrows = narrow_switches(page_a, channels, args.narrows)
            step(f"narrow switches (ms): {', '.join(f'{t:.0f}' for t in narrows)}")
            if args.narrow_only:
                browser.close()
                # Each channel's first switch, then (past the tenth) switches back to one seen.
                first, again = narrows[: len(channels)], narrows[len(channels) :]
                p50, top = statistics.median(narrows), max(narrows)
                print(
                    f"narrow switch          p50 {p50:.0f} ms, max {top:.0f} ms "
                    f"over {len(narrows)} (first visits p50 {statistics.median(first):.0f}"
                    + (f", again p50 {statistics.median(again):.0f}" if again else "")
                    + f"); load {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
                )
                return

            step("live delivery")
            page_b = browser.new_context().new_page()
            page_b.set_default_timeout(30_000)
            log_in(page_b, url, second, args.password)
            stream_id, name = channels[0]
            # Both in the (new) topic the messages go to: a channel narrow opens at the first
            # unread message, far from the newest, where new messages are not drawn.
            # A new topic per run, so a rerun on the same data starts at its newest message.
            topic = f"bench-live-{secrets.token_hex(4)}"
            topic_hash = f"{channel_hash(stream_id, name)}/topic/{topic}"
            for page in (page_a, page_b):
                page.evaluate("h => { location.hash = h; }", topic_hash)
                page.wait_for_timeout(500)
                page.wait_for_selector(FEED_READY, state="attached")
            live, missed = deliveries(page_a, page_b, name, topic, args.deliveries)
            step(f"deliveries: p50 {percentile(live, 0.5):.0f} ms, p99 {percentile(live, 0.99):.0f} ms")

            step("scrolling back")
            # From the newest message of the big channel (a plain channel narrow would open
            # at the first unread one, which may be the oldest).
            near = newest_id(url, second, args.password, stream_id)
            page_b.evaluate("h => { location.hash = h; }", f"{channel_hash(stream_id, name)}/near/{near}")
            page_b.wait_for_timeout(500)
            page_b.wait_for_selector(FEED_READY, state="attached")
            fetched, rows, heap_mb, nodes = scroll_back(page_b, args.scroll_back)
            page_b.context.close()

            live_count = round(args.live_hours * 3600 / args.live_interval)
            samples: list[tuple[int, float, int, float]] = []
            live_s = 0.0
            if live_count > 0:
                step(f"live traffic: {live_count} messages into #{name}")
                started = time.monotonic()
                samples = live_traffic(
                    browser, url, (second, args.password), (owner, args.password), channels[0], live_count
                )
                live_s = time.monotonic() - started
            for n, heap, dom, rss in samples:
                step(f"  after {n} messages: JS heap {heap:.1f} MB, {dom} DOM nodes, renderer {rss:.0f} MB")
            browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    full = (args.users, args.channels, args.messages) == (10_000, 1_000, 1_000_000)
    scale = "the issue's sizes" if full else "a SMALLER organization than the issue's"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nWeb client, {scale}: {args.users} users, {args.channels} channels, {args.messages} messages; "
        f"SQLite; {os.cpu_count()} CPUs, load {load}"
    )
    kb = sum(bytes_by_type.values()) / 1024
    print(
        f"login to usable feed   first {login:.2f} s, warm {warm:.2f} s   (target <= {TARGETS['login_s']} s)"
    )
    print(
        f"narrow switch          p50 {statistics.median(narrows):.0f} ms, max {max(narrows):.0f} ms "
        f"over {len(narrows)}   (target <= {TARGETS['narrow_ms']} ms)"
    )
    print(
        f"message to 2nd browser p50 {percentile(live, 0.5):.0f} ms, p99 {percentile(live, 0.99):.0f} ms "
        f"over {len(live)}, {missed} not shown within 10 s   "
        f"(targets {TARGETS['p50_ms']} / {TARGETS['p99_ms']} ms)"
    )
    print(
        f"first load JS+CSS      {kb:.1f} KB compressed (JS {bytes_by_type['script'] / 1024:.1f}, "
        f"CSS {bytes_by_type['stylesheet'] / 1024:.1f})   (target <= {TARGETS['bytes_kb']} KB)"
    )
    print(
        f"scrolled back          {fetched} messages fetched, {rows} rows in the DOM, "
        f"JS heap {heap_mb:.1f} MB, {nodes} DOM nodes "
        f"(target <= {TARGETS['heap_mb']} MB)"
    )

    if not samples:
        return
    _, live_heap, live_nodes, live_rss = samples[-1]
    peak = max(max(rss, heap) for _, heap, _, rss in samples)
    print(
        f"left open on live traffic  {live_count} messages ({args.live_hours:g} h at one per "
        f"{args.live_interval:g} s, sent in {live_s:.0f} s): JS heap {live_heap:.1f} MB, "
        f"{live_nodes} DOM nodes, renderer RSS {live_rss:.0f} MB, peak {peak:.0f} MB "
        f"(target <= {TARGETS['live_mb']} MB)"
    )


if __name__ == "__main__":
    main()
