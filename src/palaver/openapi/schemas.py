"""Pydantic's JSON Schemas rewritten in OpenAPI 3.0's dialect.

Pydantic writes JSON Schema 2020-12 (OpenAPI 3.1). The document is OpenAPI 3.0, like the
reference and the Swagger UI Palaver serves, so a few keywords are translated: a union with
``null`` becomes ``nullable``, ``const`` a one-value ``enum``, numeric ``exclusiveMinimum`` the
boolean form, tuples an array of their items' union. Keywords 3.0 lacks are dropped.
"""

from __future__ import annotations

from typing import Any

# JSON Schema keywords with no OpenAPI 3.0 counterpart; dropping one only loosens a schema.
_DROPPED = frozenset({"$schema", "$id", "propertyNames", "patternProperties", "unevaluatedProperties"})
# Keywords whose value is a map of names to schemas.
_SCHEMA_MAPS = frozenset({"properties", "$defs"})
# Keywords whose value is one schema or a list of them.
_SCHEMA_VALUES = frozenset({"items", "additionalProperties", "not", "anyOf", "oneOf", "allOf"})


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        # In 3.0 a $ref's siblings are ignored, so the reference goes inside an allOf.
        return {"allOf": [schema], "nullable": True}
    return {**schema, "nullable": True}


def to_openapi30(schema: Any) -> Any:
    """Translate one schema (recursively); the input is not modified."""
    if isinstance(schema, list):
        return [to_openapi30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key in _SCHEMA_MAPS:
            out[key] = {name: to_openapi30(sub) for name, sub in value.items()}
        elif key in _SCHEMA_VALUES and isinstance(value, dict | list):
            out[key] = to_openapi30(value)
        elif key == "const":
            out["enum"] = [value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out[key.replace("exclusiveM", "m")] = value
            out[key] = True
        elif key == "prefixItems":
            out["items"] = {"anyOf": to_openapi30(value)} if value else {}
        elif key == "examples":
            if isinstance(value, list) and value:
                out["example"] = value[0]
        else:
            out[key] = value
    if isinstance(out.get("type"), list):
        types = [t for t in out.pop("type") if t != "null"]
        if len(types) < len(schema["type"]):
            out["nullable"] = True
        if len(types) == 1:
            out["type"] = types[0]
        elif types:
            out["anyOf"] = [{"type": t} for t in types]
    if out.get("type") == "null":
        # Only null: 3.0 has no null type, so a nullable schema that admits no other value.
        del out["type"]
        return {**out, "nullable": True, "enum": [None]}
    for combinator in ("anyOf", "oneOf"):
        members = out.get(combinator)
        if isinstance(members, list) and any(_is_null(m) for m in schema[combinator]):
            rest = [m for m in members if not (isinstance(m, dict) and m.get("enum") == [None])]
            del out[combinator]
            if len(rest) == 1:
                return {**out, **_nullable(rest[0])} if out else _nullable(rest[0])
            out[combinator] = rest
            out["nullable"] = True
    return out
