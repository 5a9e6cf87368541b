"""The real-time API: POST /register, GET /events (long-poll), DELETE /events."""

from __future__ import annotations

from typing import Any

from palaver.api.routing import ApiRouter, Ctx, JsonDict
from palaver.lib.register import RegisterOptions, build_client_descriptor, normalize_narrow, register_queue

router = ApiRouter()


def _options(
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    include_subscribers: bool,
    slim_presence: bool,
    presence_history_limit_days: int | None,
    event_types: list[str] | None,
    all_public_streams: bool,
    client_capabilities: dict[str, bool] | None,
    fetch_event_types: list[str] | None,
    narrow: list[Any] | None,
) -> RegisterOptions:
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


@router.post("/register")
def register(
    ctx: Ctx,
    # Bots read the Markdown people typed, so raw content is the default.
    apply_markdown: bool = False,
    client_gravatar: bool = True,
    include_subscribers: bool = False,
    slim_presence: bool = False,
    presence_history_limit_days: int | None = None,
    # JSON null, as some clients send it, means every type, as an absent value does.
    event_types: list[str] | None = None,
    all_public_streams: bool = False,
    client_capabilities: dict[str, bool] | None = None,
    fetch_event_types: list[str] | None = None,
    narrow: list[Any] | None = None,
) -> JsonDict:
    options = _options(
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        include_subscribers=include_subscribers,
        slim_presence=slim_presence,
        presence_history_limit_days=presence_history_limit_days,
        event_types=event_types,
        all_public_streams=all_public_streams,
        client_capabilities=client_capabilities,
        fetch_event_types=fetch_event_types,
        narrow=narrow,
    )
    return register_queue(
        ctx.session, ctx.services.settings, ctx.services.bus, ctx.me, options, user_agent=ctx.user_agent
    )


@router.get("/events")
async def get_events(
    ctx: Ctx,
    queue_id: str | None = None,
    last_event_id: int | None = None,
    dont_block: bool = False,
    # Without queue_id, the POST /register parameters register a queue on the spot.
    apply_markdown: bool = False,
    client_gravatar: bool = True,
    include_subscribers: bool = False,
    slim_presence: bool = False,
    presence_history_limit_days: int | None = None,
    event_types: list[str] | None = None,
    all_public_streams: bool = False,
    client_capabilities: dict[str, bool] | None = None,
    fetch_event_types: list[str] | None = None,
    narrow: list[Any] | None = None,
) -> JsonDict:
    # Runs on the event loop with the database session already closed: a long-poll holds
    # neither a thread nor a connection while it waits.
    backend = ctx.services.bus
    user = ctx.me
    if queue_id is None:
        options = _options(
            apply_markdown=apply_markdown,
            client_gravatar=client_gravatar,
            include_subscribers=include_subscribers,
            slim_presence=slim_presence,
            presence_history_limit_days=presence_history_limit_days,
            event_types=event_types,
            all_public_streams=all_public_streams,
            client_capabilities=client_capabilities,
            fetch_event_types=fetch_event_types,
            narrow=narrow,
        )
        client = build_client_descriptor(ctx.services.settings, user, options, user_agent=ctx.user_agent)
        await backend.run_blocking(backend.create_queue, client)
        queue_id, last_event_id = client.queue_id, None
    events = await backend.get_events(
        user_id=user.id, queue_id=queue_id, last_event_id=last_event_id, dont_block=dont_block
    )
    return {"events": events, "queue_id": queue_id}


@router.delete("/events")
def delete_queue(ctx: Ctx, queue_id: str) -> JsonDict:
    ctx.services.bus.delete_queue(ctx.me.id, queue_id)
    return {}
