"""POST /register: a new event queue plus the state the client starts from.

The state is assembled from providers, each registered for the event type whose events
keep its keys up to date:

    @state_provider("realm_user")
    def realm_users(ctx: StateContext) -> dict[str, Any]: ...

Providers live in ``palaver/lib/state/<resource>.py`` and are imported automatically, so
a feature adds its state without editing this module. A provider runs when the client's
``fetch_event_types`` (or, without it, ``event_types``) names its type, or always when
neither is given. Placeholders (``placeholder=True``) give empty but well-formed values
for features not built yet; a real provider for the same type replaces them.

The queue is created before the state is read, so no change is lost: an event committed
while the state was being read is delivered too, even if the state already shows it.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.config import Settings
from palaver.events.queues import LONGPOLL_TIMEOUT_SECONDS, ClientDescriptor, QueueBackend, new_queue_id
from palaver.lib.channels import IncludeSubscribers
from palaver.lib.exceptions import JsonableError
from palaver.models import Realm, UserProfile
from palaver.models.requester import Requester

StateDict = dict[str, Any]

# Fetch names of older servers that clients still send; each has its own provider or, for
# zulip_version, is always answered.
LEGACY_FETCH_NAMES = frozenset({"update_display_settings", "update_global_notifications", "zulip_version"})


@dataclass(frozen=True)
class RegisterOptions:
    """The POST /register parameters (GET /events takes the same to register implicitly)."""

    apply_markdown: bool = False
    client_gravatar: bool = True
    include_subscribers: IncludeSubscribers = False
    slim_presence: bool = False
    presence_history_limit_days: int | None = None
    all_public_streams: bool = False
    event_types: list[str] | None = None
    fetch_event_types: list[str] | None = None
    narrow: list[dict[str, Any]] = field(default_factory=list)
    client_capabilities: dict[str, bool] = field(default_factory=dict)


@dataclass
class StateContext:
    """What a state provider may use."""

    session: Session
    settings: Settings
    user: UserProfile
    client: ClientDescriptor
    options: RegisterOptions
    # None: the client asked for everything.
    fetch_event_types: frozenset[str] | None
    # When the process serving the queue started (clients put it in error reports).
    server_generation: int = 0
    # Shared between providers of one request (e.g. the user's group memberships).
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def realm(self) -> Realm:
        return self.user.realm

    def wants(self, event_type: str) -> bool:
        return self.fetch_event_types is None or event_type in self.fetch_event_types

    def asked_for(self, event_type: str) -> bool:
        """Whether the client named the type explicitly (not just asked for everything)."""
        return self.fetch_event_types is not None and event_type in self.fetch_event_types


StateProvider = Callable[[StateContext], StateDict]


@dataclass(frozen=True)
class Registration:
    """A state provider, the event type that keeps its keys current, and whether it is a
    placeholder (empty keys, dropped when a real provider of the type exists)."""

    event_type: str
    provider: StateProvider
    placeholder: bool


_registry: list[Registration] = []
_discovered = False


def state_provider(event_type: str, *, placeholder: bool = False) -> Callable[[StateProvider], StateProvider]:
    """Register a function returning the /register keys kept current by ``event_type`` events."""

    def register(provider: StateProvider) -> StateProvider:
        _registry.append(Registration(event_type, provider, placeholder))
        return provider

    return register


def _discover_providers() -> None:
    global _discovered
    if _discovered:
        return
    # Imported on first use (late binding): every provider module imports this one to register.
    from palaver.lib import state  # noqa: PLC0415

    for info in sorted(pkgutil.iter_modules(state.__path__), key=lambda m: m.name):
        importlib.import_module(f"{state.__name__}.{info.name}")
    _discovered = True


def registered_providers() -> list[Registration]:
    """Every provider, in the order /register runs them."""
    _discover_providers()
    return list(_registry)


@contextmanager
def providers_replaced(registrations: Sequence[Registration]) -> Iterator[None]:
    """Run /register with these providers instead of the registered ones, for the block: a
    benchmark timing each provider, a test adding one. Not for serving (not thread-safe)."""
    _discover_providers()
    saved = list(_registry)
    _registry[:] = registrations
    try:
        yield
    finally:
        _registry[:] = saved


def known_fetch_types() -> frozenset[str]:
    _discover_providers()
    return frozenset(r.event_type for r in _registry) | LEGACY_FETCH_NAMES


def fetch_initial_state(ctx: StateContext) -> StateDict:
    """Every key the client asked for, from the providers of the wanted event types."""
    _discover_providers()
    real_types = {r.event_type for r in _registry if not r.placeholder}
    state: StateDict = {}
    owners: dict[str, str] = {}
    for registration in _registry:
        if not ctx.wants(registration.event_type):
            continue
        if registration.placeholder and registration.event_type in real_types:
            continue
        produced = registration.provider(ctx)
        for key in produced:
            if key in owners:
                # Two providers disagreeing silently would send clients whichever ran last.
                provider = registration.provider.__qualname__
                raise RuntimeError(f"/register key {key!r} comes from both {owners[key]} and {provider}")
            owners[key] = registration.provider.__qualname__
        state.update(produced)
    return state


def _version_fields() -> StateDict:
    # Clients read the brand names (the python client requires zulip_version); the interface
    # names them with "service" instead, so both are sent.
    return {
        "zulip_version": SERVICE_VERSION,
        "zulip_feature_level": FEATURE_LEVEL,
        "zulip_merge_base": "",
        "service_version": SERVICE_VERSION,
        "service_feature_level": FEATURE_LEVEL,
        "service_merge_base": "",
    }


def build_client_descriptor(
    settings: Settings, user: Requester, options: RegisterOptions, *, user_agent: str = ""
) -> ClientDescriptor:
    if options.all_public_streams and user.is_guest:
        # Guests see only channels they are subscribed to, so never all public ones.
        raise JsonableError("User not authorized for this query")
    event_types = frozenset(options.event_types) if options.event_types is not None else None
    now = time.time()
    return ClientDescriptor(
        queue_id=new_queue_id(),
        user_id=user.user_id,
        realm_id=user.realm_id,
        event_types=event_types,
        apply_markdown=options.apply_markdown,
        client_gravatar=options.client_gravatar,
        slim_presence=options.slim_presence,
        all_public_streams=options.all_public_streams,
        narrow=options.narrow,
        client_capabilities=options.client_capabilities,
        lifespan_seconds=settings.event_queue_idle_timeout_seconds,
        user_agent=user_agent[:200],
        created_at=now,
        last_access=now,
    )


def register_queue(
    session: Session,
    settings: Settings,
    backend: QueueBackend,
    user: UserProfile,
    options: RegisterOptions,
    *,
    user_agent: str = "",
) -> StateDict:
    """Create the client's queue, then read its initial state."""
    client = build_client_descriptor(settings, Requester.of(user), options, user_agent=user_agent)
    backend.create_queue(client)
    fetch_types = options.fetch_event_types if options.fetch_event_types is not None else options.event_types
    ctx = StateContext(
        session=session,
        settings=settings,
        user=user,
        client=client,
        options=options,
        fetch_event_types=frozenset(fetch_types) if fetch_types is not None else None,
        server_generation=backend.server_generation,
    )
    state = fetch_initial_state(ctx)
    return {
        "queue_id": client.queue_id,
        # Every event in the queue postdates its creation, so the client acknowledges none.
        "last_event_id": -1,
        **_version_fields(),
        "event_queue_longpoll_timeout_seconds": LONGPOLL_TIMEOUT_SECONDS,
        **state,
    }
