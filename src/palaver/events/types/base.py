"""The base of every event model, the registry of models by type and op that it fills, and the
validation of an event against its model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_registry: dict[tuple[str, str | None], type[Event]] = {}


def omit_none() -> Any:
    """A field that clients expect to be absent, not null, when it has no value."""
    return Field(default=None, exclude_if=lambda v: v is None)


class Event(BaseModel):
    # A model builds its validator and serializer with its first event (``defer_build``): a
    # server holds those only of the kinds it has sent, ~1 MiB less idle memory for all 90.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: str

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        type_field = cls.model_fields.get("type")
        op_field = cls.model_fields.get("op")
        if type_field is None or type_field.default in (None, ...):
            return
        if cls.__name__.startswith("_"):
            # A base shared by the ops of one type (``_TypingBase``) is not an event: an
            # event of its type without an ``op`` must not validate against it.
            return
        op = op_field.default if op_field is not None else None
        _registry[(type_field.default, op)] = cls

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def validate_event(data: dict[str, Any]) -> Event:
    """Check an event as a client receives it (with ``id``) against its model."""
    body = {k: v for k, v in data.items() if k != "id"}
    model = _registry.get((body.get("type", ""), body.get("op")))
    if model is None:
        raise ValueError(f"no event model for type={body.get('type')!r} op={body.get('op')!r}")
    return model.model_validate(body)


def registered_event_models() -> dict[tuple[str, str | None], type[Event]]:
    """Every event model by (type, op); op is None for types without ops."""
    return dict(_registry)
