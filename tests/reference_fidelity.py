"""Reference fidelity: which operations the suite calls, and whether their JSON bodies match.

Loaded by ``conftest.py`` as a pytest plugin. Every in-process request that reaches an API
route (any app the tests build, through ``TestClient``) is recorded by wrapping the API
application's entry (``ApiApp.__call__``, api/pipeline.py): the concrete path is
matched to an operation of Zulip's OpenAPI
reference (``shared/reference/zulip-openapi-fl372.yaml``) or of the spec
(``shared/spec/interface.md``), and a JSON body answered for a documented status is validated
against that response's schema. A test whose responses do not match fails at teardown with
the differences. Events that actions publish in tests (through the ``events`` fixture's
recorder) are checked against the reference's event schemas the same way.
``tests/test_reference_fidelity.py`` checks at the end of a full run that
every operation was called.

The reference is read from outside the repository (we copy none of its text): from
``PALAVER_REFERENCE_DIR`` or a ``shared/`` directory beside one of the checkout's parents.
Without it, both checks are skipped.

Schemas are OpenAPI 3.0, converted once to JSON Schema: ``nullable`` becomes a union with
null, ``oneOf`` becomes ``anyOf`` (Zulip's alternatives often overlap, e.g. two error
examples of the same shape), and ``additionalProperties: false`` is dropped, because the
spec is newer than the reference and adds fields to many objects. Validators are compiled
lazily, once per (operation, status): each schema twice, as fastjsonschema's generated code,
which answers the common case (a valid body) ~20 times faster than jsonschema, and as
jsonschema's ``Draft7Validator``, which has the last word on whatever the fast code rejects
and explains it (``SchemaCheck``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson
import pytest
import yaml
from jsonschema import Draft7Validator, ValidationError

from palaver.api.pipeline import ApiApp
from palaver.app import API_PREFIX

REFERENCE_FILE = "zulip-openapi-fl372.yaml"
# Paths of the reference that document concepts rather than endpoints.
DOCUMENTATION_ONLY = frozenset({"/real-time", "/rest-error-handling", "/zulip-outgoing-webhook"})
METHODS = ("get", "post", "put", "patch", "delete")
_SPEC_HEADING = re.compile(r"^### \d+\. [^:]+: (GET|POST|PUT|PATCH|DELETE) /api/v1(\S+)", re.MULTILINE)
_SKIPPED_KEYS = frozenset({"description", "example", "examples", "deprecated", "summary", "title"})


def _shared_dir() -> Path | None:
    configured = os.environ.get("PALAVER_REFERENCE_DIR")
    if configured:
        path = Path(configured)
        return path if (path / REFERENCE_FILE).exists() else None
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared"
        if (candidate / "reference" / REFERENCE_FILE).exists():
            return candidate
    return None


def to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema → JSON Schema (see the module docstring for the choices)."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SKIPPED_KEYS or key.startswith("x-") or key == "nullable":
            continue
        if key == "additionalProperties" and value is False:
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key == "oneOf":
            out["anyOf"] = to_json_schema(value)
        elif key in ("enum", "required", "default"):
            out[key] = value
        else:
            out[key] = to_json_schema(value)
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass(frozen=True)
class SchemaCheck:
    """One JSON Schema, checked fast and explained exactly.

    The fast code decides only that an instance is valid; anything it rejects is judged again
    by jsonschema, so a check is exactly as strict as jsonschema alone (formats are not
    checked by either). On every body and event of the suite, and on ~9,000 mutations of
    them (a value of another type, a key removed), the two agreed in both directions."""

    validator: Draft7Validator
    fast: Callable[[Any], Any]

    @classmethod
    def compile(cls, schema: dict[str, Any]) -> SchemaCheck:
        # Without use_default the fast code would fill in the schema's defaults, into the very
        # event dicts the tests go on to compare.
        fast = fastjsonschema.compile(schema, use_default=False, use_formats=False, detailed_exceptions=False)
        return cls(Draft7Validator(schema), fast)

    @property
    def schema(self) -> Any:
        return self.validator.schema

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        try:
            self.fast(instance)
        except fastjsonschema.JsonSchemaException:
            yield from self.validator.iter_errors(instance)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # the document's template, e.g. /users/{user_id}
    source: str  # "reference" or "spec"


@dataclass
class Reference:
    document: dict[str, Any]
    components: dict[str, Any]
    operations: list[Operation]
    # Per method: (precedence, compiled path, operation), most specific first.
    matchers: dict[str, list[tuple[tuple[int, ...], re.Pattern[str], Operation]]]
    validators: dict[tuple[Operation, int], SchemaCheck | None] = field(default_factory=dict)

    def _resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    def match(self, method: str, path: str) -> Operation | None:
        for _, pattern, operation in self.matchers.get(method, ()):
            if pattern.fullmatch(path):
                return operation
        return None

    def validator(self, operation: Operation, status: int) -> SchemaCheck | None:
        key = (operation, status)
        if key not in self.validators:
            self.validators[key] = self._compile(operation, status)
        return self.validators[key]

    def _compile(self, operation: Operation, status: int) -> SchemaCheck | None:
        if operation.source != "reference":
            return None
        spec = self.document["paths"][operation.path][operation.method.lower()]
        response = self._resolve(spec.get("responses", {}).get(str(status)))
        if not isinstance(response, dict):
            return None
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return None
        converted = to_json_schema(schema)
        if (operation.method, operation.path) == ("GET", "/events"):
            _allow_spec_event_types(converted)
            _allow_null_stream_update_values(converted)
        # References point into the whole document's components, converted once.
        return SchemaCheck.compile({"components": self.components, "allOf": [converted]})

    def path_param_types(self, path: str, method: str) -> dict[str, str]:
        item = self.document["paths"][path]
        types: dict[str, str] = {}
        for declared in [*item.get("parameters", []), *item[method].get("parameters", [])]:
            param = self._resolve(declared)
            if param.get("in") == "path":
                types[param["name"]] = self._resolve(param.get("schema", {})).get("type", "string")
        return types


# Event types the spec adds to the reference's (their payloads are checked by the event models
# in ``palaver.events.types`` through the ``events`` fixture).
SPEC_EVENT_TYPES = ("channel_folder", "device", "navigation_view", "reminders")
# Ops newer than the reference (Zulip 12.0), which real clients ask for by capability:
# checked by their event models the same way.
NEWER_EVENT_OPS = {"realm_emoji": ("add", "update_one")}


def _allow_spec_event_types(schema: Any) -> None:
    """Add the spec's event types to the alternatives of the ``events`` items."""
    if isinstance(schema, dict):
        events = schema.get("properties", {}).get("events")
        if isinstance(events, dict) and "anyOf" in events.get("items", {}):
            spec_event = {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"enum": list(SPEC_EVENT_TYPES)}},
            }
            events["items"]["anyOf"].append(spec_event)
            for event_type, ops in NEWER_EVENT_OPS.items():
                events["items"]["anyOf"].append(
                    {
                        "type": "object",
                        "required": ["type", "op"],
                        "properties": {"type": {"enum": [event_type]}, "op": {"enum": list(ops)}},
                    }
                )
            return
        for value in schema.values():
            _allow_spec_event_types(value)
    elif isinstance(schema, list):
        for value in schema:
            _allow_spec_event_types(value)


def _enum_of(schema: Any) -> list[Any]:
    if not isinstance(schema, dict):
        return []
    if "enum" in schema:
        return list(schema["enum"])
    return [value for part in schema.get("allOf", []) for value in _enum_of(part)]


def _allow_null_stream_update_values(schema: Any) -> None:
    """``stream`` ``update`` values may be null: properties that GET /streams documents as
    nullable (message_retention_days, first_message_id, the spec's folder_id) change to null,
    though the reference's event schema lists only non-null types."""
    if isinstance(schema, dict):
        properties = schema.get("properties", {})
        if _enum_of(properties.get("type")) == ["stream"] and _enum_of(properties.get("op")) == ["update"]:
            properties["value"] = {"anyOf": [properties["value"], {"type": "null"}]}
            return
        for value in schema.values():
            _allow_null_stream_update_values(value)
    elif isinstance(schema, list):
        for value in schema:
            _allow_null_stream_update_values(value)


def _segment_rank(segment: str, types: dict[str, str]) -> tuple[int, str]:
    if not segment.startswith("{"):
        return 0, re.escape(segment)
    name = segment.strip("{}")
    if types.get(name) == "integer":
        return 1, r"-?\d+"
    if name == "filename":
        return 3, r".+"  # an uploaded file's name includes its directory
    return 2, r"[^/]+"


def _build_matcher(path: str, types: dict[str, str]) -> tuple[tuple[int, ...], re.Pattern[str]]:
    ranks, parts = [], []
    for segment in path.strip("/").split("/"):
        rank, part = _segment_rank(segment, types)
        ranks.append(rank)
        parts.append(part)
    return tuple(ranks), re.compile("/" + "/".join(parts))


@cache
def load_reference() -> Reference | None:
    shared = _shared_dir()
    if shared is None:
        return None
    with open(shared / "reference" / REFERENCE_FILE, encoding="utf-8") as f:
        document = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    reference = Reference(document, to_json_schema(document["components"]), [], {})
    seen: set[tuple[str, str]] = set()
    for path, item in document["paths"].items():
        if path in DOCUMENTATION_ONLY:
            continue
        for method in METHODS:
            if method in item:
                operation = Operation(method.upper(), path, "reference")
                reference.operations.append(operation)
                seen.add((operation.method, path))
                ranks, pattern = _build_matcher(path, reference.path_param_types(path, method))
                reference.matchers.setdefault(operation.method, []).append((ranks, pattern, operation))
    spec = (shared / "spec" / "interface.md").read_text(encoding="utf-8")
    for method, path in _SPEC_HEADING.findall(spec):
        if (method, path) not in seen:
            operation = Operation(method, path, "spec")
            reference.operations.append(operation)
            # The spec's path parameters are IDs, except the realm domain's name.
            types = {name: "integer" for name in re.findall(r"\{(\w+_id)\}", path)}
            ranks, pattern = _build_matcher(path, types)
            reference.matchers.setdefault(method, []).append((ranks, pattern, operation))
    for matchers in reference.matchers.values():
        matchers.sort(key=lambda entry: entry[0])
    return reference


# Recording -----------------------------------------------------------------------------------


@dataclass
class Recorder:
    called: set[Operation] = field(default_factory=set)
    mismatches: list[str] = field(default_factory=list)
    responses_validated: int = 0

    def record(self, method: str, path: str, status: int, content_type: str, body: bytes) -> None:
        reference = load_reference()
        if reference is None or method == "HEAD" or not path.startswith(API_PREFIX + "/"):
            return
        operation = reference.match(method, path[len(API_PREFIX) :])
        if operation is None:
            return
        self.called.add(operation)
        if not content_type.startswith("application/json") or not body:
            return
        validator = reference.validator(operation, status)
        if validator is None:
            return
        self.responses_validated += 1
        errors = sorted(validator.iter_errors(orjson.loads(body)), key=lambda e: list(e.absolute_path))
        for error in errors[:3]:
            where = "/".join(str(p) for p in error.absolute_path) or "(body)"
            self.mismatches.append(f"{method} {path} → {status}: at {where}: {error.message[:300]}")


RECORDER = Recorder()


@cache
def _event_validator() -> SchemaCheck | None:
    """The reference's schema of one ``events`` item (with the spec's event types allowed)."""
    reference = load_reference()
    if reference is None:
        return None
    validator = reference.validator(Operation("GET", "/events", "reference"), 200)
    if validator is None:
        return None
    found: list[Any] = []

    def find(node: Any) -> None:
        if isinstance(node, dict):
            events = node.get("properties", {}).get("events")
            if isinstance(events, dict) and "items" in events:
                found.append(events["items"])
                return
            for value in node.values():
                find(value)
        elif isinstance(node, list):
            for value in node:
                find(value)

    schema = validator.schema
    assert isinstance(schema, dict)
    find(schema["allOf"])
    return SchemaCheck.compile({"components": reference.components, "allOf": [found[0]]})


def check_published_event(event: dict[str, Any]) -> None:
    """Validate an event as an action published it (before per-client tailoring)."""
    validator = _event_validator()
    if validator is None:
        return
    body = {"id": 0, **event}
    for error in list(validator.iter_errors(body))[:1]:
        RECORDER.mismatches.append(f"event {event.get('type')}/{event.get('op')}: {error.message[:300]}")


def _recording(original: Callable[[Any, Any, Any, Any], Awaitable[None]]) -> Any:
    """``original`` (an API entry taking ``self, scope, receive, send``), recording its answers."""

    async def entry(self: Any, scope: Any, receive: Any, send: Any) -> None:
        response: dict[str, Any] = {"status": 0, "type": "", "body": []}

        async def capture(message: Any) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"content-type":
                        response["type"] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                response["body"].append(message.get("body", b""))
            await send(message)

        await original(self, scope, receive, capture)
        RECORDER.record(
            scope["method"], scope["path"], response["status"], response["type"], b"".join(response["body"])
        )

    entry._fidelity = True  # type: ignore[attr-defined]
    return entry


def _install() -> None:
    # The one door to the API's views (/api/v1 and /json).
    if not getattr(ApiApp.__call__, "_fidelity", False):
        ApiApp.__call__ = _recording(ApiApp.__call__)  # type: ignore[method-assign]


# Pytest hooks and fixtures -------------------------------------------------------------------

FIDELITY_TEST = "test_every_operation_is_called"
# Operations that other branches implement; each is listed until its branch is merged, and
# ``test_not_yet_routed_operations_are_really_missing`` fails once one of them is routed, so
# the list only shrinks.
NOT_YET_ROUTED: set[tuple[str, str]] = set()


def pytest_configure(config: pytest.Config) -> None:
    _install()
    _install_event_check()
    if _is_controller(config):
        config.pluginmanager.register(_WorkerResults(), "palaver-fidelity-workers")


def _install_event_check() -> None:
    from tests.helpers import EventRecorder

    original = EventRecorder.__call__
    if getattr(original, "_fidelity", False):
        return

    def record(self: EventRecorder, realm_id: int, event: dict[str, Any], user_ids: Any) -> None:
        original(self, realm_id, event, user_ids)
        check_published_event(event)

    record._fidelity = True  # type: ignore[attr-defined]
    EventRecorder.__call__ = record  # type: ignore[method-assign]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # The coverage check must see every other test's requests, so it runs last.
    last = [item for item in items if item.name == FIDELITY_TEST]
    if last:
        items[:] = [item for item in items if item.name != FIDELITY_TEST] + last
    config.stash[_FULL_RUN] = _is_full_run(config, items)


_FULL_RUN = pytest.StashKey[bool]()


def _is_full_run(config: pytest.Config, items: list[pytest.Item]) -> bool:
    """Whether the whole suite was collected (no -k/-m, no file or test selection)."""
    if config.option.keyword or config.option.markexpr or config.option.deselect:
        return False
    root = Path(str(config.rootpath))
    return all(Path(arg.split("::")[0]).resolve() in (root, root / "tests") for arg in config.args)


def is_full_run(config: pytest.Config) -> bool:
    return config.stash.get(_FULL_RUN, False)


@pytest.fixture(autouse=True)
def _reference_responses() -> Iterator[None]:
    """Fail the test whose responses do not match the reference's schemas."""
    RECORDER.mismatches.clear()
    yield
    if RECORDER.mismatches:
        found = "\n".join(RECORDER.mismatches)
        RECORDER.mismatches.clear()
        report = os.environ.get("PALAVER_FIDELITY_REPORT")
        if report:
            # Survey mode: collect every mismatch of a run in one file instead of failing.
            with open(report, "a", encoding="utf-8") as f:
                f.write(found + "\n")
            return
        pytest.fail(f"responses that do not match the reference's schemas:\n{found}", pytrace=False)


def _is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker: it runs some of the tests, and reports what they called."""
    return hasattr(config, "workerinput")


def _is_controller(config: pytest.Config) -> bool:
    """The pytest-xdist controller: it runs no tests, and judges the union of the workers' calls."""
    return not _is_worker(config) and bool(getattr(config.option, "numprocesses", None))


class _WorkerResults:
    """Controller side of ``--numprocesses``: each worker sends its calls when it finishes."""

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        RECORDER.called.update(Operation(*fields) for fields in output.get("fidelity_called", ()))
        RECORDER.responses_validated += output.get("fidelity_validated", 0)


def missing_operations(reference: Reference) -> list[str]:
    """The reference's operations no test called (of those routed), as "METHOD /path" lines."""
    return sorted(
        f"{op.method} {op.path}"
        for op in reference.operations
        if op not in RECORDER.called and (op.method, op.path) not in NOT_YET_ROUTED
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config):
        output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]  # set by xdist
        output["fidelity_called"] = [(op.method, op.path, op.source) for op in RECORDER.called]
        output["fidelity_validated"] = RECORDER.responses_validated
        return
    report = os.environ.get("PALAVER_FIDELITY_REPORT")
    reference = load_reference()
    if report and reference is not None:
        with open(report, "a", encoding="utf-8") as f:
            for op in sorted(set(reference.operations) - RECORDER.called, key=lambda o: (o.path, o.method)):
                f.write(f"not called: {op.method} {op.path}\n")
    # With workers, ``test_every_operation_is_called`` cannot see the other workers' calls;
    # the controller checks their union here and fails the run as that test would.
    if _is_controller(config) and reference is not None and _is_full_run(config, []):
        missing = missing_operations(reference)
        if missing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        config.stash[_MISSING] = missing


_MISSING = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    reference = load_reference()
    if reference is None:
        terminalreporter.write_line("reference fidelity: no reference found, nothing checked")
        return
    terminalreporter.write_line(
        f"reference fidelity: {len(RECORDER.called)} of {len(reference.operations)} operations called, "
        f"{RECORDER.responses_validated} bodies validated"
    )
    missing = terminalreporter.config.stash.get(_MISSING, [])
    if missing:
        terminalreporter.write_line(
            "FAILED reference fidelity: operations no test calls:\n" + "\n".join(missing), red=True
        )
