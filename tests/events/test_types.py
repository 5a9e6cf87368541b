from __future__ import annotations

import pytest
from pydantic import ValidationError

from palaver.events import types as ev


def test_every_model_is_registered_by_type_and_op() -> None:
    models = ev.registered_event_models()
    assert models[("realm_user", "update")] is ev.RealmUserUpdate
    assert models[("user_settings", "update")] is ev.UserSettingsUpdate
    assert models[("heartbeat", None)] is ev.Heartbeat


def test_validate_event_accepts_client_shape_with_id() -> None:
    event = {"id": 3, "type": "realm_user", "op": "update", "person": {"user_id": 1, "full_name": "X"}}
    assert isinstance(ev.validate_event(event), ev.RealmUserUpdate)


def test_validate_event_rejects_unknown_fields_and_types() -> None:
    with pytest.raises(ValidationError):
        ev.validate_event({"type": "user_settings", "op": "update", "property": "x", "value": 1, "extra": 1})
    with pytest.raises(ValueError, match="no event model"):
        ev.validate_event({"type": "nonsense"})


def test_optional_fields_are_omitted_not_null() -> None:
    assert "language_name" not in ev.UserSettingsUpdate(property="enter_sends", value=True).to_dict()
    with_language = ev.UserSettingsUpdate(property="default_language", value="de", language_name="German")
    assert with_language.to_dict()["language_name"] == "German"
    change = ev.CustomProfileFieldChange(id=1, value=None).model_dump()
    assert change == {"id": 1, "value": None}
