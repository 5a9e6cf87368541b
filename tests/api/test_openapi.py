"""The served OpenAPI document: public, valid OpenAPI 3, true to the code, and to the reference.

The document is generated (``palaver/openapi/``); these tests check it against the route
table and the parameter layer it comes from, validate real responses with it, and compare it
with the reference (``shared/reference``) operation by operation: the operations (by
operation ID), their method and path, and their parameters' names and whether each is
required. Every intended difference is listed below with its reason, so a new one fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

import pytest
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate as validate_spec

from palaver.api import discover_routers
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.events.types import registered_event_models
from palaver.openapi.document import build_document, openapi_path
from palaver.openapi.schemas import to_openapi30
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.reference_fidelity import DOCUMENTATION_ONLY, Reference, load_reference

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


# The document itself --------------------------------------------------------------------------


def test_served_without_credentials_at_both_addresses(client: TestClient, document: dict[str, Any]) -> None:
    # No Host of any realm, no authorization: the document is the server's, not a realm's.
    assert document["openapi"].startswith("3.0.")
    again = client.get("/api/v1/openapi.json")
    assert again.status_code == 200
    assert again.json() == document


def test_is_a_valid_openapi_document(document: dict[str, Any]) -> None:
    validate_spec(document)


def test_every_endpoint_is_documented_once(document: dict[str, Any]) -> None:
    routed = {
        (endpoint.method, openapi_path(endpoint.path))
        for router in discover_routers()
        for endpoint in router.endpoints
    }
    documented = {(method, path) for method, path, _ in operations(document)}
    assert documented == routed
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids))


def test_parameters_follow_the_parameter_layer(document: dict[str, Any]) -> None:
    send = document["paths"]["/messages"]["post"]
    form = send["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert set(form["schema"]["required"]) == {"type", "to", "content"}
    # Strings are sent as they are; anything else is JSON text, as Zulip clients send it.
    assert "content" not in form["encoding"]
    assert form["encoding"]["to"] == {"contentType": "application/json"}
    assert "subject" in form["schema"]["properties"]["topic"]["description"]
    assert "application/json" in send["requestBody"]["content"]

    fetch = {p["name"]: p for p in document["paths"]["/messages"]["get"]["parameters"]}
    assert fetch["narrow"]["in"] == "query"
    assert "application/json" in fetch["narrow"]["content"]
    assert fetch["num_before"]["schema"]["minimum"] == 0
    assert fetch["apply_markdown"]["schema"] == {"type": "boolean", "default": True}

    user = document["paths"]["/users/{user_id}"]["patch"]
    path_param = next(p for p in user["parameters"] if p["in"] == "path")
    # Starlette's int convertor takes digits only.
    assert path_param == {
        "name": "user_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }

    upload = document["paths"]["/user_uploads"]["post"]["requestBody"]["content"]
    assert list(upload) == ["multipart/form-data"]


def test_a_view_is_documented_from_its_signature() -> None:
    router = ApiRouter()

    @router.post("/widgets/{widget_id:int}", auth="optional", rate_limited=False)
    def update_widget(
        ctx: Ctx,
        widget_id: int,
        name: str,
        sizes: list[int] | None = None,
        color: Literal["red", "blue"] = "red",
        legacy: Annotated[str | None, ApiParam(documentation_only=True, aliases=("old_legacy",))] = None,
    ) -> JsonDict:
        """Update a widget.

        What it does, at length.
        """
        return {}

    document = build_document([router], server_url="/api/v1", event_models=[])
    validate_spec(document)
    operation = document["paths"]["/widgets/{widget_id}"]["post"]
    assert operation["operationId"] == "update-widget"
    assert operation["summary"] == "Update a widget."
    assert operation["description"] == "What it does, at length."
    assert operation["parameters"] == [
        {"name": "widget_id", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 0}}
    ]
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert form["schema"]["required"] == ["name"]
    properties = form["schema"]["properties"]
    assert properties["name"] == {"type": "string"}
    assert properties["sizes"] == {"type": "array", "items": {"type": "integer"}, "nullable": True}
    assert properties["color"] == {"type": "string", "enum": ["red", "blue"], "default": "red"}
    assert "`old_legacy`" in properties["legacy"]["description"]
    assert "ignored" in properties["legacy"]["description"]
    assert form["encoding"] == {"sizes": {"contentType": "application/json"}}
    assert operation["security"] == [{"BasicAuth": []}, {}]
    assert "429" not in operation["responses"]


def test_json_schema_becomes_openapi_30() -> None:
    assert to_openapi30({"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}) == {
        "type": "integer",
        "nullable": True,
        "default": None,
    }
    assert to_openapi30({"anyOf": [{"$ref": "#/components/schemas/X"}, {"type": "null"}]}) == {
        "allOf": [{"$ref": "#/components/schemas/X"}],
        "nullable": True,
    }
    assert to_openapi30({"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}) == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "nullable": True,
    }
    assert to_openapi30({"const": "message"}) == {"enum": ["message"]}
    assert to_openapi30({"type": "integer", "exclusiveMinimum": 0}) == {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    assert to_openapi30({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}) == {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    }
    assert to_openapi30({"type": ["string", "null"]}) == {"type": "string", "nullable": True}
    assert to_openapi30({"type": "object", "propertyNames": {"pattern": "x"}}) == {"type": "object"}


def test_security_and_error_envelope(document: dict[str, Any]) -> None:
    assert document["components"]["securitySchemes"]["BasicAuth"] == {
        "type": "http",
        "scheme": "basic",
        "description": document["components"]["securitySchemes"]["BasicAuth"]["description"],
    }
    assert document["paths"]["/users/me"]["get"]["security"] == [{"BasicAuth": []}]
    assert document["paths"]["/server_settings"]["get"]["security"] == []
    assert {"BasicAuth": []} in document["paths"]["/users"]["get"]["security"]
    assert {} in document["paths"]["/users"]["get"]["security"]  # spectators
    error = document["components"]["schemas"]["JsonError"]
    assert set(error["required"]) == {"result", "msg", "code"}
    for _, _, operation in operations(document):
        assert operation["responses"]["400"] == {"$ref": "#/components/responses/BadRequest"}
        assert operation["responses"]["default"] == {"$ref": "#/components/responses/Error"}


def _validator(document: dict[str, Any], method: str, path: str) -> OAS30Validator:
    operation = document["paths"][path][method.lower()]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    return OAS30Validator({"components": document["components"], "allOf": [schema]})


def test_events_are_described_by_their_models(api: Api, realm: SeededRealm, document: dict[str, Any]) -> None:
    items = document["paths"]["/events"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    refs = {
        ref["$ref"].rsplit("/", 1)[1] for ref in items["allOf"][1]["properties"]["events"]["items"]["anyOf"]
    }
    assert refs == {model.__name__ for model in registered_event_models().values()}

    # Real answers validate against the document.
    queue = assert_json_success(api.post(realm.hamlet, "register", {"event_types": ["message", "reaction"]}))
    sent = assert_json_success(
        api.post(realm.othello, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "hi"})
    )
    assert_json_success(api.post(realm.othello, f"messages/{sent['id']}/reactions", {"emoji_name": "smile"}))
    body = assert_json_success(
        api.get(
            realm.hamlet, "events", {"queue_id": queue["queue_id"], "last_event_id": -1, "dont_block": True}
        )
    )
    assert {event["type"] for event in body["events"]} == {"message", "reaction"}
    validator = _validator(document, "GET", "/events")
    assert not [error.message for error in validator.iter_errors(body)]
    wrong = {**body, "events": [{**body["events"][0], "id": "one"}]}
    assert list(validator.iter_errors(wrong))


# The docs page ---------------------------------------------------------------------------------


def test_docs_page_is_served_offline(client: TestClient) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    # Every file the page loads is Palaver's own: relative addresses, no CDN.
    addresses = re.findall(r'(?:src|href|data-url)="([^"]+)"', html)
    assert addresses
    for address in addresses:
        assert "//" not in address, address
        url = urljoin("http://palaver.test/api/docs", address)
        loaded = client.get(url)
        assert loaded.status_code == 200, url
        assert loaded.content
    assert client.get("/api/docs/static/index.html").status_code == 404


# The reference ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    # Parameter name → required.
    parameters: dict[str, bool] = field(hash=False)


def _shape(path: str) -> str:
    """A path with its parameters' names left out: ``/users/{}``."""
    return re.sub(r"{\w+}", "{}", path)


def _where(operation: Operation) -> tuple[str, str]:
    return operation.method, _shape(operation.path)


def _resolve(root: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _body_parameters(root: dict[str, Any], schema: Any) -> dict[str, bool]:
    schema = _resolve(root, schema)
    found: dict[str, bool] = {}
    for part in schema.get("allOf", []):
        found.update(_body_parameters(root, part))
    required = set(schema.get("required", []))
    for name in schema.get("properties", {}):
        found[name] = name in required
    return found


def operations_by_id(root: dict[str, Any]) -> dict[str, Operation]:
    found = {}
    for method, path, operation in operations(root):
        if path in DOCUMENTATION_ONLY:
            continue
        item = root["paths"][path]
        parameters: dict[str, bool] = {}
        for reference in [*item.get("parameters", []), *operation.get("parameters", [])]:
            param = _resolve(root, reference)
            if param["in"] in ("path", "query"):
                parameters[param["name"]] = bool(param.get("required")) or param["in"] == "path"
        body = _resolve(root, operation.get("requestBody", {}))
        for content in body.get("content", {}).values():
            parameters.update(_body_parameters(root, content.get("schema", {})))
        found[operation["operationId"]] = Operation(method, path, parameters)
    return found


@dataclass(frozen=True)
class Known:
    """An intended difference in one operation's parameters, and why."""

    reason: str
    # Parameters the reference documents that Palaver does not take.
    missing: frozenset[str] = frozenset()
    # Parameters Palaver takes that the reference does not document.
    extra: frozenset[str] = frozenset()
    # Parameters that are required on one side only.
    required: frozenset[str] = frozenset()


def _diff(ours: Operation, theirs: Operation) -> Known:
    both = ours.parameters.keys() & theirs.parameters.keys()
    return Known(
        reason="",
        missing=frozenset(theirs.parameters.keys() - ours.parameters.keys()),
        extra=frozenset(ours.parameters.keys() - theirs.parameters.keys()),
        required=frozenset(name for name in both if ours.parameters[name] != theirs.parameters[name]),
    )


# Reference operations Palaver serves under another operation, or not at all.
ONLY_IN_REFERENCE: dict[str, str] = {
    "get-user-by-email": "one route, GET /users/{user_id_or_email} (get-user), takes an ID or an email",
}

_ZULIP = "Zulip's server has this endpoint too, outside the API reference; Palaver serves it for its clients"
_SPEC_FEATURE = "part of a feature the spec adds to the reference ({}); the reference predates it"
_LEGACY = "a legacy route older Zulip clients still call, served by the view of {}"

# Palaver's operations the reference does not document (the spec's own operations, which the
# reference cannot know, are recognized by method and path and need no entry).
ONLY_IN_PALAVER: dict[str, str] = {
    **dict.fromkeys(
        ["list-bots", "create-bot", "update-bot", "deactivate-bot", "regenerate-bot-api-key"], _ZULIP
    ),
    **dict.fromkeys(["read-storage", "update-storage", "remove-storage"], _ZULIP + " (bot storage)"),
    **dict.fromkeys(["list-realm-domains", "add-realm-domain", "remove-realm-domain"], _ZULIP),
    **dict.fromkeys(["upload-avatar", "delete-avatar", "upload-realm-icon", "delete-realm-icon"], _ZULIP),
    **dict.fromkeys(["upload-realm-logo", "delete-realm-logo", "deactivate-realm", "update-realm"], _ZULIP),
    **dict.fromkeys(["update-profile-field", "delete-profile-field", "delete-realm-export"], _ZULIP),
    **dict.fromkeys(
        [
            "create-default-stream-group",
            "update-default-stream-group",
            "update-default-stream-group-streams",
            "remove-default-stream-group",
        ],
        _ZULIP,
    ),
    "get-realm-logins": "Palaver's sign-in audit log (method, address, client) for administrators",
    "reset-two-factor": "Palaver's reset of someone's authenticator by an administrator (a lost phone)",
    "list-default-streams": "reads the default channels the reference's add/remove operations change",
    "add-submessage": _ZULIP + " (poll and to-do widgets)",
    "mark-onboarding-step-as-read": _ZULIP + " (onboarding_steps in POST /register)",
    **dict.fromkeys(
        ["list-channel-folders", "create-channel-folder", "reorder-channel-folders"],
        _SPEC_FEATURE.format("channel_folder"),
    ),
    **dict.fromkeys(
        ["list-navigation-views", "add-navigation-view", "update-navigation-view", "remove-navigation-view"],
        _SPEC_FEATURE.format("navigation_view"),
    ),
    **dict.fromkeys(["list-reminders", "delete-reminder"], _SPEC_FEATURE.format("reminders")),
    "register-client-device": _SPEC_FEATURE.format("device; remove_client_device"),
    "report-message": "Zulip's message reports (newer than the reference), which "
    "the mobile app's report form calls; the reference already has moderation_request_channel_id",
    "update-display-settings": _LEGACY.format("update-settings"),
    "update-notification-settings": _LEGACY.format("update-settings"),
    "update-subscription-property": "the single-channel form of update-subscription-settings",
    "update-subscription-property-by-post": _LEGACY.format("update-subscription-property"),
}

# Operations whose method or path differs from the reference's (parameter names aside).
DIFFERENT_PATHS: dict[str, str] = {}

_NEWER_CHANNEL_SETTINGS = frozenset(
    {
        "can_create_topic_group",
        "can_delete_any_message_group",
        "can_delete_own_message_group",
        "can_move_messages_out_of_channel_group",
        "can_move_messages_within_channel_group",
        "can_resolve_topics_group",
        "folder_id",
        "topics_policy",
    }
)

KNOWN_PARAMETER_DIFFERENCES: dict[str, Known] = {
    "create-drafts": Known(
        "the reference marks the body optional, but a request without drafts creates nothing: Palaver "
        "answers it with the missing-argument error",
        required=frozenset({"drafts"}),
    ),
    "create-invite-link": Known(
        "not implemented: invitations do not add the new user to groups (reported as ignored)",
        missing=frozenset({"group_ids"}),
    ),
    "send-invites": Known(
        "not implemented: invitations do not add the new user to groups (reported as ignored)",
        missing=frozenset({"group_ids"}),
    ),
    "get-events": Known(
        "without queue_id, GET /events registers a queue on the spot, taking POST /register's "
        "parameters (as Zulip's server does for its own clients)",
        extra=frozenset(
            {
                "all_public_streams",
                "apply_markdown",
                "client_capabilities",
                "client_gravatar",
                "event_types",
                "fetch_event_types",
                "include_subscribers",
                "narrow",
                "presence_history_limit_days",
                "slim_presence",
            }
        ),
        required=frozenset({"queue_id"}),
    ),
    "get-user": Known(
        "one route takes the user's ID or email in the same path segment (see get-user-by-email)",
        missing=frozenset({"user_id"}),
        extra=frozenset({"user_id_or_email"}),
    ),
    "get-users": Known("the spec adds user_ids (feature level 384)", extra=frozenset({"user_ids"})),
    "subscribe": Known(
        "channel settings newer than the reference, in the spec (channel folders, topics_policy, "
        "group permission settings)",
        extra=_NEWER_CHANNEL_SETTINGS,
    ),
    "update-stream": Known(
        "channel settings newer than the reference, in the spec (channel folders, topics_policy, "
        "group permission settings)",
        extra=_NEWER_CHANNEL_SETTINGS,
    ),
    "update-message": Known(
        "the spec adds prev_content_sha256 (feature level 379)", extra=frozenset({"prev_content_sha256"})
    ),
    "update-realm-user-settings-defaults": Known(
        "the spec's realm-level defaults add web_inbox_show_channel_folders and leave out "
        "web_mark_read_on_scroll_policy, which Palaver keeps personal (REALM_DEFAULT_EXCLUDED)",
        missing=frozenset({"web_mark_read_on_scroll_policy"}),
        extra=frozenset({"web_inbox_show_channel_folders"}),
    ),
    "update-settings": Known(
        "personal settings the spec adds",
        extra=frozenset({"resolved_topic_notice_auto_read_policy", "web_inbox_show_channel_folders"}),
    ),
    "upload-custom-emoji": Known(
        "the reference leaves the file optional, but there is nothing to upload without it: Palaver "
        "requires it",
        required=frozenset({"filename"}),
    ),
    "upload-file": Known(
        "the reference leaves the file optional, but there is nothing to upload without it: Palaver "
        "requires it",
        required=frozenset({"filename"}),
    ),
}


@pytest.fixture(scope="module")
def reference() -> Reference:
    loaded = load_reference()
    if loaded is None:
        pytest.skip("the reference (shared/reference) is not available; set PALAVER_REFERENCE_DIR")
    return loaded


def test_operations_match_the_reference(document: dict[str, Any], reference: Reference) -> None:
    ours = operations_by_id(document)
    theirs = operations_by_id(reference.document)
    spec = {(op.method, _shape(op.path)) for op in reference.operations if op.source == "spec"}
    problems = []
    for op_id in sorted(theirs.keys() - ours.keys()):
        if op_id not in ONLY_IN_REFERENCE:
            problems.append(f"only in the reference: {op_id} ({theirs[op_id].method} {theirs[op_id].path})")
    for op_id in sorted(ours.keys() - theirs.keys()):
        op = ours[op_id]
        if _where(op) not in spec and op_id not in ONLY_IN_PALAVER:
            problems.append(f"only in Palaver: {op_id} ({op.method} {op.path})")
    for op_id in sorted(ours.keys() & theirs.keys()):
        mine, other = ours[op_id], theirs[op_id]
        if (mine.method, _shape(mine.path)) != (
            other.method,
            _shape(other.path),
        ) and op_id not in DIFFERENT_PATHS:
            problems.append(f"{op_id}: {mine.method} {mine.path} here, {other.method} {other.path} there")
    stale = [op_id for op_id in ONLY_IN_REFERENCE if op_id not in theirs.keys() - ours.keys()]
    stale += [op_id for op_id in ONLY_IN_PALAVER if op_id not in ours.keys() - theirs.keys()]
    stale += [
        op_id
        for op_id in DIFFERENT_PATHS
        if op_id not in ours
        or op_id not in theirs
        or (ours[op_id].method, _shape(ours[op_id].path))
        == (theirs[op_id].method, _shape(theirs[op_id].path))
    ]
    assert not problems, "\n".join(problems)
    assert not stale, f"listed differences that are gone: {stale}"


def test_parameters_match_the_reference(document: dict[str, Any], reference: Reference) -> None:
    ours = operations_by_id(document)
    theirs = operations_by_id(reference.document)
    problems = []
    for op_id in sorted(ours.keys() & theirs.keys()):
        found = _diff(ours[op_id], theirs[op_id])
        known = KNOWN_PARAMETER_DIFFERENCES.get(op_id, Known(""))
        if (found.missing, found.extra, found.required) != (known.missing, known.extra, known.required):
            problems.append(
                f"{op_id}: missing={sorted(found.missing)} extra={sorted(found.extra)} "
                f"required differs={sorted(found.required)}"
            )
    assert not problems, "\n".join(problems)
