"""The base of every event model, and the registry of models by type and op that it fills."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_registry: dict[tuple[str, str | None], type[Event]] = {}


def _omit_none() -> Any:
    """A field that clients expect to be absent, not null, when it has no value."""
    return Field(default=None, exclude_if=lambda v: v is None)


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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
    model_config = ConfigDict(extra="forbid", frozen=True)
