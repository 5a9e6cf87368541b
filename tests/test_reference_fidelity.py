"""Fidelity to the reference: the suite calls every operation, and the schema checks bite.

The recording and the per-test response validation live in ``tests/reference_fidelity.py``
(a plugin loaded by ``conftest.py``); ``test_every_operation_is_called`` runs last and only
judges a full run of the suite.
"""

from __future__ import annotations

import re

import pytest

from palaver.api import discover_routers
from tests.reference_fidelity import (
    NOT_YET_ROUTED,
    RECORDER,
    Operation,
    Reference,
    SchemaCheck,
    is_full_run,
    load_reference,
    missing_operations,
    to_json_schema,
)


@pytest.fixture(scope="module")
def reference() -> Reference:
    loaded = load_reference()
    if loaded is None:
        pytest.skip("the reference (shared/reference) is not available; set PALAVER_REFERENCE_DIR")
    return loaded


def _op(reference: Reference, method: str, path: str) -> Operation | None:
    found = reference.match(method, path)
    return found


def test_paths_match_the_most_specific_operation(reference: Reference) -> None:
    assert _op(reference, "GET", "/users/5") == Operation("GET", "/users/{user_id}", "reference")
    assert _op(reference, "GET", "/users/me") == Operation("GET", "/users/me", "reference")
    assert _op(reference, "GET", "/users/a@b.example") == Operation("GET", "/users/{email}", "reference")
    assert _op(reference, "PATCH", "/users/a@b.example") == Operation("PATCH", "/users/{email}", "reference")
    assert _op(reference, "POST", "/channels/create") == Operation("POST", "/channels/create", "spec")
    assert _op(reference, "GET", "/user_uploads/2/ab/cd/file.txt") == Operation(
        "GET", "/user_uploads/{realm_id_str}/{filename}", "reference"
    )
    assert _op(reference, "GET", "/no_such_thing") is None


def test_schema_conversion() -> None:
    converted = to_json_schema(
        {
            "type": "object",
            "additionalProperties": False,
            "description": "dropped",
            "properties": {"description": {"type": "string", "nullable": True}, "x": {"oneOf": [{}, {}]}},
        }
    )
    assert converted == {
        "type": "object",
        "properties": {
            "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "x": {"anyOf": [{}, {}]},
        },
    }


def test_validation_catches_a_wrong_body(reference: Reference) -> None:
    validator = reference.validator(Operation("GET", "/users/me", "reference"), 200)
    assert validator is not None
    good = {"result": "success", "msg": "", "user_id": 5, "email": "a@b.c", "is_admin": False}
    assert not list(validator.iter_errors(good))
    errors = list(validator.iter_errors({**good, "user_id": "five", "is_admin": None}))
    assert {tuple(e.absolute_path) for e in errors} == {("user_id",), ("is_admin",)}
    # Error bodies are checked against the documented error responses.
    error_validator = reference.validator(Operation("GET", "/messages/{message_id}", "reference"), 400)
    assert error_validator is not None
    assert list(error_validator.iter_errors({"result": "error", "msg": 5}))


def test_a_schema_check_judges_as_jsonschema_does() -> None:
    check = SchemaCheck.compile(
        {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "integer"},
                "at": {"type": "string", "format": "date-time"},
                "flag": {"type": "boolean", "default": False},
            },
        }
    )
    # Formats are not checked (jsonschema checks none without a format checker), and the
    # instance is left as it was (no default filled in).
    instance = {"id": 1, "at": "not a date"}
    assert not list(check.iter_errors(instance))
    assert instance == {"id": 1, "at": "not a date"}
    wrongs: list[object] = [{"id": True}, {"id": "1"}, {}, []]
    for wrong in wrongs:
        assert [e.message for e in check.iter_errors(wrong)] == [
            e.message for e in check.validator.iter_errors(wrong)
        ]
        assert list(check.iter_errors(wrong))


def test_not_yet_routed_operations_are_really_missing(reference: Reference) -> None:
    routed = {
        (endpoint.method, re.sub(r"\{[^}]+\}", "{}", endpoint.path))
        for router in discover_routers()
        for endpoint in router.endpoints
    }
    known = {(op.method, op.path) for op in reference.operations}
    for method, path in sorted(NOT_YET_ROUTED):
        assert (method, path) in known, f"{method} {path} is not an operation of the reference"
        assert (method, re.sub(r"\{[^}]+\}", "{}", path)) not in routed, (
            f"{method} {path} is routed now: remove it from NOT_YET_ROUTED"
        )


def test_every_operation_is_called(request: pytest.FixtureRequest, reference: Reference) -> None:
    """Runs last (the plugin orders it): every operation was called by some test."""
    if not is_full_run(request.config):
        pytest.skip("only a full run of the suite shows which operations it calls")
    if hasattr(request.config, "workerinput"):
        pytest.skip("this worker saw only its share: the xdist controller checks every worker's calls")
    missing = missing_operations(reference)
    assert not missing, "operations no test calls:\n" + "\n".join(missing)


def test_published_events_are_checked(reference: Reference) -> None:
    from tests.reference_fidelity import check_published_event

    before = len(RECORDER.mismatches)
    check_published_event({"type": "realm_user", "op": "remove", "person": {"user_id": 3, "full_name": "A"}})
    check_published_event({"type": "channel_folder", "op": "add"})  # a type only the spec has
    assert len(RECORDER.mismatches) == before
    check_published_event({"type": "realm_user", "op": "remove", "person": {"user_id": "3"}})
    check_published_event({"type": "no_such_event"})
    assert len(RECORDER.mismatches) == before + 2
    del RECORDER.mismatches[before:]
