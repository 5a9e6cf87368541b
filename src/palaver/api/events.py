"""The real-time API: POST /register, GET /events (long-poll), DELETE /events."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from palaver.api.context import Ctx
from palaver.api.params import set_signature
from palaver.api.routing import ApiRouter, JsonDict
from palaver.events.queues import QueueBackend
from palaver.lib.channels import IncludeSubscribers
from palaver.lib.narrow import normalize_narrow
from palaver.lib.register import RegisterOptions, build_client_descriptor, register_queue
from palaver.models.requester import Requester
from palaver.services import Services

router = ApiRouter()

V = TypeVar("V", bound=Callable[..., Any])


def register_options(
    *,
    # Bots read the Markdown people typed, so raw content is the default.
    apply_markdown: bool = False,
    client_gravatar: bool = True,
    # "partial": large channels list only bots and recently active subscribers.
    include_subscribers: IncludeSubscribers = False,
    slim_presence: bool = False,
    presence_history_limit_days: int | None = None,
    # JSON null, as some clients send it, means every type, as an absent value does.
    event_types: list[str] | None = None,
    all_public_streams: bool = False,
    client_capabilities: dict[str, bool] | None = None,
    fetch_event_types: list[str] | None = None,
    narrow: list[Any] | None = None,
) -> RegisterOptions:
    """The POST /register parameters, declared once for both views that take them."""
    return RegisterOptions(
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        include_subscribers=include_subscribers,
        slim_presence=slim_presence,
        presence_history_limit_days=presence_history_limit_days,
        all_public_streams=all_public_streams,
        event_types=event_types,
        fetch_event_types=fetch_event_types,
        narrow=normalize_narrow(narrow or []),
        client_capabilities=client_capabilities or {},
    )


def takes_register_options(view: V) -> V:
    """Declare ``register_options``'s parameters as the view's own, in place of ``**options``.

    The parameter layer reads a view's signature and type hints, so this is how two views
    take the same parameters without listing them twice; the view receives them as
    keywords and passes them on with ``register_options(**options)``.
    """
    own = inspect.signature(view)
    shared = inspect.signature(register_options).parameters.values()
    kept = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    set_signature(view, own.replace(parameters=[*kept, *shared]))
    hints = typing.get_type_hints(register_options, include_extras=True)
    del hints["return"]
    view.__annotations__ = {**typing.get_type_hints(view, include_extras=True), **hints}
    return view


@router.post("/register")
@takes_register_options
def register(ctx: Ctx, **options: Any) -> JsonDict:
    return register_queue(
        ctx.session,
        ctx.services.settings,
        ctx.services.bus,
        ctx.me,
        register_options(**options),
        user_agent=ctx.user_agent,
    )


async def poll_known_user(
    services: Services,
    requester: Requester,
    queue_id: str,
    last_event_id: int | None = None,
    dont_block: bool = False,
    **options: Any,
) -> JsonDict:
    """GET /events for a poll by known credentials (api/known_credentials.py): the user's
    ID is all a poll of an existing queue needs, so it is served with no session at all."""
    user_id = requester.user_id
    del options, requester
    return await poll_queue(services.bus, user_id, queue_id, last_event_id, dont_block)


@router.get("/events", known_view=poll_known_user, known_when="queue_id")
@takes_register_options
async def get_events(
    ctx: Ctx,
    queue_id: str | None = None,
    last_event_id: int | None = None,
    dont_block: bool = False,
    # Without queue_id, the POST /register parameters register a queue on the spot.
    **options: Any,
) -> JsonDict:
    # Runs on the event loop with the database session already closed: a long-poll holds
    # neither a thread nor a connection while it waits.
    backend = ctx.services.bus
    requester = ctx.requester
    client = None
    if queue_id is None:
        client = build_client_descriptor(
            ctx.services.settings, requester, register_options(**options), user_agent=ctx.user_agent
        )
        queue_id, last_event_id = client.queue_id, None
    user_id = requester.user_id
    # A parked long-poll may wait a heartbeat interval, thousands at once: the closed
    # session (with the user authentication loaded) and the options would be kept that
    # long, for every parked request. Nothing after this point needs them
    # (``execute_async`` has let go of its own reference to ctx).
    del requester, options, ctx
    if client is not None:
        await backend.run_blocking(backend.create_queue, client)
    return await poll_queue(backend, user_id, queue_id, last_event_id, dont_block)


async def poll_queue(
    backend: QueueBackend, user_id: int, queue_id: str, last_event_id: int | None, dont_block: bool
) -> JsonDict:
    """The answer to a poll of an existing queue."""
    # Each event's JSON as the queue holds it (one serialization per shared copy), spliced
    # into the response by orjson.
    texts = await backend.wait_for_events(
        user_id=user_id, queue_id=queue_id, last_event_id=last_event_id, dont_block=dont_block
    )
    return {"events": [orjson.Fragment(text) for text in texts], "queue_id": queue_id}


@router.delete("/events")
def delete_queue(ctx: Ctx, queue_id: str) -> JsonDict:
    ctx.services.bus.delete_queue(ctx.requester.user_id, queue_id)
    return {}
