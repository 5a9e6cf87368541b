"""The OpenAPI document, generated from the route table, the parameter layer and the models.

Nothing here describes an endpoint by hand: the paths and methods are the ``ApiRouter``s'
endpoints, each parameter's name, type, default and place comes from the ``ParamSpec`` the
pipeline validates requests with, and schemas are the ones Pydantic derives from the same
types (the event models of ``events/types/`` for ``GET /events``). What the code cannot
know (Zulip's operation IDs where a view is named otherwise) is in ``names.py``.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import typing
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic.errors import PydanticInvalidForJsonSchema, PydanticSchemaGenerationError, PydanticUserError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.api.params import ParamSpec
from palaver.api.routing import ApiRouter, Endpoint
from palaver.events.types import Event, registered_event_models
from palaver.openapi.names import OPERATION_IDS
from palaver.openapi.schemas import to_openapi30

OPENAPI_VERSION = "3.0.3"
_REF = "#/components/schemas/{model}"
_PATH_PARAM = re.compile(r"{(\w+)(?::(\w+))?}")
_METHOD_ORDER = {"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4}
# JSON Schema types whose JSON text reads the same as a plain query or form value would.
_SCALARS = frozenset({"integer", "number", "boolean"})
_JSON = "application/json"
_FORM = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"
# Event fields the queue layer reads and removes before an event reaches a client
# (``MessageEvent.internal``, see ``event_for_client``): not part of the interface.
_UNDELIVERED_EVENT_FIELDS = frozenset({"internal"})

_DESCRIPTION = """\
Palaver's API, generated from its route table and parameter declarations.

Requests authenticate with HTTP Basic (the user's email and API key). Parameters go in the
query string for GET, else in a form-encoded body (or multipart, with files, or a JSON
object); values that are not plain strings (numbers, booleans, lists, objects) are
JSON-encoded, as Zulip clients send them. Every JSON answer carries `result` and `msg`;
errors add a `code`. The same endpoints are served under `/json` for the web client,
authenticated by its session cookie and `X-CSRFToken` header instead.
"""


def openapi_path(path: str) -> str:
    """A route's path as an OpenAPI template: ``/users/{user_id:int}`` → ``/users/{user_id}``."""
    return _PATH_PARAM.sub(r"{\1}", path)


def operation_id(endpoint: Endpoint) -> str:
    return OPERATION_IDS.get((endpoint.method, endpoint.path)) or endpoint.view.__name__.replace("_", "-")


class _Schemas:
    """Every schema of the document, generated in one pass so shared models are defined once."""

    def __init__(self, endpoints: Sequence[Endpoint], events: Iterable[type[Event]]) -> None:
        inputs: list[tuple[Any, Any, TypeAdapter[Any]]] = []
        for index, endpoint in enumerate(endpoints):
            for spec in endpoint.specs:
                if spec.is_file:
                    continue
                key = (index, spec.arg_name)
                try:
                    spec.adapter.json_schema()
                except (PydanticInvalidForJsonSchema, PydanticSchemaGenerationError, PydanticUserError):
                    continue  # a type JSON Schema cannot express: documented as any value
                inputs.append((key, "validation", spec.adapter))
        inputs.extend((("event", model.__name__), "serialization", TypeAdapter(model)) for model in events)
        schemas, definitions = TypeAdapter.json_schemas(inputs, ref_template=_REF)
        self._by_key = {key: to_openapi30(schema) for (key, _), schema in schemas.items()}
        self.components: dict[str, Any] = {
            name: to_openapi30(schema) for name, schema in definitions.get("$defs", {}).items()
        }
        for (kind, _), schema in self._by_key.items():
            if kind == "event" and "$ref" in schema:
                self._add_event_id(schema["$ref"].rsplit("/", 1)[1])

    def _add_event_id(self, name: str) -> None:
        # Clients receive each event with its queue's ``id``, which the models leave out.
        schema = self.components[name]
        properties = schema.get("properties", {})
        schema["properties"] = {
            "id": {"type": "integer"},
            **{key: value for key, value in properties.items() if key not in _UNDELIVERED_EVENT_FIELDS},
        }
        schema["required"] = [
            "id",
            *(key for key in schema.get("required", []) if key not in _UNDELIVERED_EVENT_FIELDS),
        ]

    def param(self, index: int, spec: ParamSpec) -> dict[str, Any]:
        if spec.is_file:
            return {"type": "string", "format": "binary"}
        schema = dict(self._by_key.get((index, spec.arg_name), {}))
        schema.pop("title", None)
        if not spec.required and spec.default is not None and "default" not in schema:
            # A default with no JSON form is simply not documented.
            with contextlib.suppress(PydanticSerializationError):
                schema["default"] = to_jsonable_python(spec.default)
        return schema

    def event(self, model: type[Event]) -> dict[str, Any]:
        schema: dict[str, Any] = self._by_key[("event", model.__name__)]
        return schema


def _is_plain(spec: ParamSpec, schema: dict[str, Any]) -> bool:
    """Whether the value is sent as it is: text, or a scalar whose JSON is its plain form."""
    return spec.raw_string or spec.in_path or spec.is_file or schema.get("type") in _SCALARS


def _description(spec: ParamSpec, schema: dict[str, Any]) -> str | None:
    notes = []
    if "description" in schema:
        notes.append(schema.pop("description"))
    if spec.aliases:
        notes.append("Also accepted as " + ", ".join(f"`{a}`" for a in spec.aliases) + ".")
    if spec.is_file:
        notes.append("The file, in a multipart field of any name.")
    if spec.documentation_only:
        notes.append("Accepted for compatibility and ignored.")
    return " ".join(notes) or None


def _parameter(schemas: _Schemas, index: int, spec: ParamSpec, where: str) -> dict[str, Any]:
    schema = schemas.param(index, spec)
    param: dict[str, Any] = {"name": spec.request_name, "in": where}
    description = _description(spec, schema)
    if description:
        param["description"] = description
    param["required"] = spec.required or where == "path"
    if _is_plain(spec, schema):
        param["schema"] = schema
    else:
        # Zulip's convention: the query value is the JSON text of the parameter.
        param["content"] = {_JSON: {"schema": schema}}
    return param


def _request_body(schemas: _Schemas, index: int, specs: list[ParamSpec]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    encoding: dict[str, Any] = {}
    required: list[str] = []
    for spec in specs:
        schema = schemas.param(index, spec)
        description = _description(spec, schema)
        properties[spec.request_name] = {**schema, "description": description} if description else schema
        if spec.required:
            required.append(spec.request_name)
        if not (spec.raw_string or spec.is_file):
            encoding[spec.request_name] = {"contentType": _JSON}
    body: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        body["required"] = required
    if any(spec.is_file for spec in specs):
        content = {_MULTIPART: {"schema": body, **({"encoding": encoding} if encoding else {})}}
    else:
        content = {
            _FORM: {"schema": body, **({"encoding": encoding} if encoding else {})},
            # A JSON object body carries the same parameters, each as its JSON value.
            _JSON: {"schema": body},
        }
    return {"required": bool(required), "content": content}


def _success_schema(endpoint: Endpoint, schemas: _Schemas, events: Sequence[type[Event]]) -> dict[str, Any]:
    base = {"$ref": _REF.format(model="JsonSuccess")}
    if (endpoint.method, endpoint.path) != ("GET", "/events"):
        return base
    event_schema = {"anyOf": [schemas.event(model) for model in events]}
    return {
        "allOf": [
            base,
            {
                "type": "object",
                "required": ["events", "queue_id"],
                "properties": {
                    "events": {"type": "array", "items": event_schema},
                    "queue_id": {"type": "string"},
                },
            },
        ]
    }


def _returns_json(endpoint: Endpoint) -> bool:
    returned = typing.get_type_hints(endpoint.view).get("return")
    return typing.get_origin(returned) is dict or returned is dict


def _responses(endpoint: Endpoint, schemas: _Schemas, events: Sequence[type[Event]]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success."}
    if _returns_json(endpoint):
        success["content"] = {_JSON: {"schema": _success_schema(endpoint, schemas, events)}}
    if endpoint.rate_limited:
        success["headers"] = {
            name: {"$ref": f"#/components/headers/{name}"}
            for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
        }
    responses: dict[str, Any] = {"200": success, "400": {"$ref": "#/components/responses/BadRequest"}}
    if endpoint.auth != "none":
        responses["401"] = {"$ref": "#/components/responses/Unauthorized"}
    if endpoint.rate_limited:
        responses["429"] = {"$ref": "#/components/responses/RateLimited"}
    responses["default"] = {"$ref": "#/components/responses/Error"}
    return responses


def _security(endpoint: Endpoint) -> list[dict[str, list[str]]]:
    if endpoint.auth == "none":
        return []
    if endpoint.auth == "optional":
        return [{"BasicAuth": []}, {}]  # anonymous (spectator) access where the realm allows it
    return [{"BasicAuth": []}]


def _operation(
    index: int, endpoint: Endpoint, schemas: _Schemas, events: Sequence[type[Event]]
) -> dict[str, Any]:
    doc = inspect.getdoc(endpoint.view) or ""
    summary, _, description = doc.partition("\n")
    operation: dict[str, Any] = {
        "operationId": operation_id(endpoint),
        "summary": summary or endpoint.view.__name__.replace("_", " ").capitalize(),
        "tags": [endpoint.view.__module__.rsplit(".", 1)[-1]],
    }
    if description.strip():
        operation["description"] = description.strip()
    path_specs = [spec for spec in endpoint.specs if spec.in_path]
    other = [spec for spec in endpoint.specs if not spec.in_path]
    parameters = [_parameter(schemas, index, spec, "path") for spec in path_specs]
    convertors = dict(_PATH_PARAM.findall(endpoint.path))
    for param in parameters:
        if convertors.get(param["name"]) == "int":
            # Starlette's ``int`` convertor matches digits only: a negative ID is no such path.
            param["schema"] = {**param["schema"], "minimum": 0}
    if endpoint.method == "GET":
        parameters += [_parameter(schemas, index, spec, "query") for spec in other]
    elif other:
        operation["requestBody"] = _request_body(schemas, index, other)
    if parameters:
        operation["parameters"] = parameters
    operation["security"] = _security(endpoint)
    operation["responses"] = _responses(endpoint, schemas, events)
    return operation


def _components(schemas: _Schemas) -> dict[str, Any]:
    error = {"$ref": _REF.format(model="JsonError")}
    return {
        "securitySchemes": {
            "BasicAuth": {
                "type": "http",
                "scheme": "basic",
                "description": "The user's email (or bot's) as the username, the API key as the password.",
            }
        },
        "schemas": {
            "JsonSuccess": {
                "type": "object",
                "required": ["result", "msg"],
                "properties": {
                    "result": {"type": "string", "enum": ["success"]},
                    "msg": {"type": "string"},
                    "ignored_parameters_unsupported": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Parameters the request sent that this endpoint does not use.",
                    },
                },
                "additionalProperties": True,
            },
            "JsonError": {
                "type": "object",
                "required": ["result", "msg", "code"],
                "properties": {
                    "result": {"type": "string", "enum": ["error"]},
                    "msg": {"type": "string", "description": "A message that may be shown to the user."},
                    "code": {"type": "string", "description": "A machine-readable error code."},
                },
                # Some errors carry fields of their own (``var_name``, ``retry-after``, ...).
                "additionalProperties": True,
            },
            **schemas.components,
        },
        "responses": {
            "BadRequest": {"description": "The request was refused.", "content": {_JSON: {"schema": error}}},
            "Unauthorized": {
                "description": "Missing or invalid credentials, or a deactivated user or organization.",
                "content": {_JSON: {"schema": error}},
            },
            "Error": {
                "description": "Any other error: 403 (not allowed), 404 (no such object or path), "
                "405 (method), 413 (body too large), 500, 503 (database or Redis unreachable; with "
                "Retry-After).",
                "content": {_JSON: {"schema": error}},
            },
            "RateLimited": {
                "description": "Too many requests; retry after the given number of seconds.",
                "headers": {"Retry-After": {"$ref": "#/components/headers/Retry-After"}},
                "content": {_JSON: {"schema": error}},
            },
        },
        "headers": {
            "X-RateLimit-Limit": {
                "description": "Requests allowed per window.",
                "schema": {"type": "integer"},
            },
            "X-RateLimit-Remaining": {
                "description": "Requests left in the current window.",
                "schema": {"type": "integer"},
            },
            "X-RateLimit-Reset": {
                "description": "When the window resets, in seconds since the epoch.",
                "schema": {"type": "integer"},
            },
            "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}},
        },
    }


def build_document(
    routers: Sequence[ApiRouter], *, server_url: str, event_models: Iterable[type[Event]] | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.0 document of ``routers``' endpoints, served under ``server_url``."""
    endpoints = sorted(
        (endpoint for router in routers for endpoint in router.endpoints),
        key=lambda e: (openapi_path(e.path), _METHOD_ORDER.get(e.method, 9)),
    )
    events = sorted(
        event_models if event_models is not None else set(registered_event_models().values()),
        key=lambda model: model.__name__,
    )
    schemas = _Schemas(endpoints, events)
    paths: dict[str, dict[str, Any]] = {}
    seen: dict[str, Endpoint] = {}
    for index, endpoint in enumerate(endpoints):
        operation = _operation(index, endpoint, schemas, events)
        other = seen.setdefault(operation["operationId"], endpoint)
        if other is not endpoint:
            raise ValueError(
                f"operation ID {operation['operationId']} of {endpoint.method} {endpoint.path} "
                f"is also that of {other.method} {other.path} (name one in openapi/names.py)"
            )
        paths.setdefault(openapi_path(endpoint.path), {})[endpoint.method.lower()] = operation
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Palaver",
            "version": SERVICE_VERSION,
            "description": _DESCRIPTION,
            "x-feature-level": FEATURE_LEVEL,
        },
        "servers": [{"url": server_url}],
        "security": [{"BasicAuth": []}],
        "tags": [
            {"name": name} for name in sorted({op["tags"][0] for p in paths.values() for op in p.values()})
        ],
        "paths": paths,
        "components": _components(schemas),
    }
