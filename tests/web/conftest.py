"""Fixtures for browser tests: a real ``palaver serve`` process and Playwright's Chromium.

``live_server`` (one per test session) serves a seeded organization on the bare host
(``root_realm_string_id=""``), so ``live_server.url`` opens it. ``browser`` is Debian's
headless Chromium driven by Playwright (its own browser download is not reachable here);
``app_page(name)`` opens the app signed in as ``name``, in a context each person keeps for
the whole package (signed in through the login form once); ``new_page()`` gives each call a
fresh context, for the tests of logging in itself. When a test fails, every page it opened
is saved as a screenshot under ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from sqlalchemy import select

from palaver.config import load_settings
from palaver.models import UserProfile
from tests.servers import ServerProcess, clean_environment, free_port, http_client, launch, wait_until_healthy

if TYPE_CHECKING:
    from tests.web.browser.client import SignedIn

# Debian's chromium-headless-shell: the same Chromium release as /usr/bin/chromium, built as
# the headless shell (Chromium's "old headless", which Playwright itself runs for headless
# tests). /usr/bin/chromium in headless mode runs the whole desktop browser without a
# window; the browser tests cost it 24-26 CPU-s against 7-8 for the shell, same tests, same
# results (tests/web/browser and test_login_browser.py, alternated runs).
# PALAVER_TEST_CHROMIUM=/usr/bin/chromium runs them in the full browser.
CHROMIUM = os.environ.get("PALAVER_TEST_CHROMIUM", "/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
PASSWORD = "secret-password"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# name -> (full name, role); desdemona is the owner who creates the organization.
LIVE_USERS = {
    "iago": ("Iago", 200),
    "hamlet": ("King Hamlet", 400),
    "othello": ("Othello, the Moor of Venice", 400),
}


@dataclass
class LiveServer:
    url: str
    port: int
    data_dir: Path
    env: dict[str, str]
    log: Path
    process: ServerProcess | None = None
    # name -> (email, password, api_key)
    users: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    @property
    def realm_url(self) -> str:
        return self.url

    def api(self, name: str) -> httpx.Client:
        """An API client (HTTP Basic with the user's API key) for setting up a test."""
        email, _, api_key = self.users[name]
        return http_client(base_url=f"{self.url}/api/v1", auth=(email, api_key), timeout=30)

    def logs(self) -> str:
        return self.log.read_text()[-4000:]

    def user_by_email(self, email: str) -> UserProfile | None:
        """The account with this delivery email, read from the server's database (detached)."""
        from palaver.bootstrap import open_services

        database_url = f"sqlite:///{self.data_dir.parent / 'palaver.db'}"
        settings = load_settings(env={}, database_url=database_url, data_dir=str(self.data_dir))
        with open_services(settings) as services, services.db.session() as session:
            query = select(UserProfile).where(UserProfile.delivery_email == email)
            user = session.scalars(query).one_or_none()
            if user is not None:
                session.expunge(user)
            return user

    def start(self) -> None:
        # Each start appends to the one log, so a failure shows what the earlier run said.
        self.process = launch(self.env, [], self.log, append=True)
        try:
            wait_until_healthy(self.url, self.process, self.logs)
        except AssertionError as error:
            pytest.fail(str(error))

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def restart(self) -> None:
        """Stop and start the server on the same port and database (sessions survive)."""
        self.stop()
        self.start()


def seed_organization(settings_values: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """The organization on the root domain, made through the actions as a test realm is."""
    from palaver.actions.realm import do_create_realm
    from palaver.actions.users import do_create_user
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_email_host
    from palaver.models import Realm

    settings = load_settings(env={}, **settings_values)
    users: dict[str, tuple[str, str, str]] = {}
    with open_services(settings) as services, services.db.session() as session:
        email_host = realm_email_host(settings, Realm(string_id="", name=""))
        password_hash = services.passwords.hash(PASSWORD)
        realm, owner = do_create_realm(
            session,
            string_id="",
            name="Browser Test Organization",
            owner_email="desdemona@example.com",
            owner_full_name="Desdemona",
            owner_password_hash=password_hash,
            email_host=email_host,
            default_channels=True,
        )
        users["desdemona"] = (owner.delivery_email, PASSWORD, owner.api_key)
        for name, (full_name, role) in LIVE_USERS.items():
            user = do_create_user(
                session,
                realm,
                email=f"{name}@example.com",
                full_name=full_name,
                password_hash=password_hash,
                email_host=email_host,
                role=role,
            )
            users[name] = (user.delivery_email, PASSWORD, user.api_key)
    return users


def start_live_server(
    tmp: Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    config: Path | None = None,
    open_signup: bool = False,
    **extra: str,
) -> LiveServer:
    """A seeded ``palaver serve`` on a free loopback port (or ``port``), at ``http://{host}:{port}``
    (``localhost`` for WebAuthn, which takes host names only). ``config`` is a palaver.toml
    (sign-in providers); ``open_signup`` lets anyone join without an invitation. ``extra``
    settings may name the port as ``{port}`` (a second origin on the same server, say)."""
    port = port if port is not None else free_port()
    url = f"http://{host}:{port}"
    values = {
        "data_dir": str(tmp / "data"),
        "database_url": f"sqlite:///{tmp / 'palaver.db'}",
        "external_url": url,
        "root_realm_string_id": "",
        "password_time_cost": "1",
        "password_memory_cost_kib": "8",
        **{name: value.format(port=port) for name, value in extra.items()},
    }
    users = seed_organization(values)
    if open_signup:
        _open_signup(values)
    env = clean_environment(
        **{f"PALAVER_{name.upper()}": value for name, value in values.items()},
        **({"PALAVER_CONFIG": str(config)} if config is not None else {}),
        PALAVER_HOST="127.0.0.1",
        PALAVER_PORT=str(port),
        PALAVER_CREATE_DEMO_REALM="false",
        PALAVER_LOG_LEVEL="warning",
        # Browser tests log in and poll far more often than a person would.
        PALAVER_API_RATE_LIMIT="100000/60",
        PALAVER_AUTH_RATE_LIMIT_PER_USERNAME="1000/60",
        PALAVER_AUTH_RATE_LIMIT_PER_IP="1000/60",
        # Long-polls end every few seconds, so a stop or restart is prompt.
        PALAVER_HEARTBEAT_SECONDS="5",
    )
    server = LiveServer(url, port, tmp / "data", env, tmp / "server.log", users=users)
    server.start()
    return server


def _open_signup(settings_values: dict[str, Any]) -> None:
    from palaver.bootstrap import open_services
    from palaver.models import Realm

    settings = load_settings(env={}, **settings_values)
    with open_services(settings) as services, services.db.session() as session, session.begin():
        session.scalars(select(Realm).where(Realm.string_id == "")).one().invite_required = False


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = start_live_server(tmp_path_factory.mktemp("live-server"))
    try:
        yield server
    finally:
        server.stop()


# The browser --------------------------------------------------------------------------------


# Package scope: while Playwright's sync API is open it keeps an event loop running in this
# thread, which would break every async test that runs after the browser tests.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-chromium (.ci/run does, as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # Keeps each phase's report on the item, so fixtures can tell in teardown that it failed.
    report = yield
    setattr(item, f"palaver_report_{report.when}", report)
    return report


def _failed(item: pytest.Item) -> bool:
    return any(
        getattr(getattr(item, f"palaver_report_{when}", None), "failed", False) for when in ("setup", "call")
    )


def _save_screenshots(item: pytest.Item, pages: list[Any]) -> None:
    """Each of a failed test's pages, under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", item.nodeid)[-150:]
    for i, page in enumerate(pages):
        try:
            page.screenshot(path=str(ARTIFACTS / f"{stem}-{i}.png"), full_page=True)
        except Exception as error:  # a crashed page must not hide the test's own failure
            print(f"screenshot failed: {error}")


def wait_for(page: Any, script: str, arg: Any = None, timeout: float = 10.0) -> Any:
    """Polls ``script`` until it is truthy, across the page's own navigations.

    Not Playwright's ``wait_for_function``: that compiles its predicate with ``eval``, which
    the app's Content-Security-Policy rightly refuses, so it fails whenever the app's page is
    already there when it starts."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = page.evaluate(script, arg)
        except PlaywrightError as error:
            # A page that navigates (a sign-in's redirects) loses the context being asked.
            if "context was destroyed" not in str(error) and "navigat" not in str(error):
                raise
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {script} ({arg!r}) on {page.url}")
        time.sleep(0.02)


APP_TITLE = "() => document.title.endsWith(' - Palaver')"


def wait_for_app(page: Any, timeout: float = 30.0) -> None:
    """Waits until the page is the signed-in app (its title names the view and Palaver)."""
    wait_for(page, APP_TITLE, timeout=timeout)


def close_page(page: Any) -> None:
    """Close ``page`` once it is on a page that stays put.

    A page told mid-test that its language changed reloads itself (main.js); Chromium's close
    of a page in the middle of a navigation can wait forever, and ``close`` has no timeout. So
    the page is first taken to a blank page, bounded; a navigation of its own that interrupts
    that (the reload) is let finish, and the blanking tried again."""
    if page.is_closed():
        return
    for _ in range(5):
        try:
            page.goto("about:blank", timeout=5_000)
            break
        except Exception as error:  # a crashed or stuck page is closed all the same
            print(f"blanking the page before closing it failed: {error}")
            if "interrupted by another navigation" not in str(error):
                break
            try:
                page.wait_for_load_state("load", timeout=5_000)
            except Exception as waiting:
                print(f"waiting for the page's own navigation failed: {waiting}")
    page.close()


class NewPages:
    """``new_page(**context_options)``: a page in a fresh context (its own cookies).

    ``close()`` (the fixture's teardown; a fixture that changes what open pages react to
    calls it before undoing its change) saves a failed test's screenshots and closes every
    page and context made; a second call does nothing."""

    def __init__(self, browser: Any, request: pytest.FixtureRequest) -> None:
        self.browser = browser
        self.request = request
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def __call__(self, **options: Any) -> Any:
        context = self.browser.new_context(**options)
        context.set_default_timeout(10_000)
        context.on("weberror", lambda error: self.errors.append(str(error.error)))
        self.contexts.append(context)
        return context.new_page()

    def close(self) -> None:
        contexts, self.contexts = self.contexts, []
        if contexts and _failed(self.request.node):
            _save_screenshots(self.request.node, [page for context in contexts for page in context.pages])
        for context in contexts:
            for page in context.pages:
                close_page(page)
            context.close()


@pytest.fixture
def new_page(browser: Any, request: pytest.FixtureRequest) -> Iterator[NewPages]:
    """A page in a fresh context (its own cookies), for the tests of logging in and those that
    need a context of their own (permissions)."""
    pages = NewPages(browser, request)
    yield pages
    pages.close()
    if not _failed(request.node):
        _no_uncaught_errors(pages.errors)


@pytest.fixture(scope="package")
def signed_in(browser: Any, live_server: LiveServer) -> Iterator[SignedIn]:
    """Each person's signed-in browser context, shared by the browser tests (``SignedIn``)."""
    # Imported here: the helpers module imports ``LiveServer`` from this one.
    from tests.web.browser.client import SignedIn

    contexts = SignedIn(browser, live_server)
    yield contexts
    contexts.close()


@pytest.fixture
def app_page(signed_in: SignedIn, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``app_page(name, hash_="", viewport=..., color_scheme=...)``: a new page of the app,
    signed in as ``name``, closed when the test ends. Two names are two people."""
    opened: list[tuple[str, Any]] = []
    errors: list[str] = []

    def make(name: str, hash_: str = "", **emulation: Any) -> Any:
        def on_error(error: Any) -> None:
            errors.append(f"{name}: {error}")

        page = signed_in.page(name, hash_, on_error=on_error, **emulation)
        opened.append((name, page))
        return page

    yield make
    failed = _failed(request.node)
    if failed:
        _save_screenshots(request.node, [page for _, page in opened])
    for _, page in opened:
        close_page(page)
    if failed:
        for name in {name for name, _ in opened}:
            signed_in.discard(name)
    else:
        _no_uncaught_errors(errors)


def _no_uncaught_errors(errors: list[str]) -> None:
    """A test whose pages threw an exception nobody caught fails, though what it looked at
    came out right: the error stopped some other part of the app."""
    if errors:
        pytest.fail("uncaught errors in the app's pages:\n" + "\n".join(errors), pytrace=False)


# TestClient helpers for the server tests ----------------------------------------------------


@pytest.fixture
def web(client: Any, realm: Any) -> Iterator[Any]:
    """A cookie-keeping client on the realm's own host (the shared app, a private cookie jar)."""
    from tests.client import TestClient

    with_jar = TestClient(client.app, base_url=f"http://{realm.host}")
    yield with_jar
    with_jar.close()
