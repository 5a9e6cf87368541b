"""Finding the model of an event by its type and op, to validate an event as a client receives it."""

from __future__ import annotations

from typing import Any

from palaver.events.types.base import Event, _registry


def validate_event(data: dict[str, Any]) -> Event:
    """Check an event as a client receives it (with ``id``) against its model."""
    body = {k: v for k, v in data.items() if k != "id"}
    model = _registry.get((body.get("type", ""), body.get("op")))
    if model is None:
        raise ValueError(f"no event model for type={body.get('type')!r} op={body.get('op')!r}")
    return model.model_validate(body)


def registered_event_models() -> dict[tuple[str, str | None], type[Event]]:
    return dict(_registry)
