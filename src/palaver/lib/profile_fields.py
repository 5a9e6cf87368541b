"""Custom profile field reads and value validation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.models import CustomProfileField, CustomProfileFieldValue


def get_profile_fields(session: Session, realm_id: int) -> list[CustomProfileField]:
    return list(
        session.scalars(
            select(CustomProfileField)
            .where(CustomProfileField.realm_id == realm_id)
            .order_by(CustomProfileField.order, CustomProfileField.id)
        )
    )


def format_profile_field(field: CustomProfileField) -> dict[str, Any]:
    result: dict[str, Any] = {
        "id": field.id,
        "type": field.field_type,
        "order": field.order,
        "name": field.name,
        "hint": field.hint,
        "field_data": field.field_data,
        "required": field.required,
        "editable_by_user": field.editable_by_user,
    }
    # Clients read a missing display_in_profile_summary as false; it is sent only when true.
    if field.display_in_profile_summary:
        result["display_in_profile_summary"] = True
    return result


# Built once, on the table (GET /users/me and /register ask on every call); a statement
# made and ORM-compiled per call cost several times what running it does.
_VALUES = CustomProfileFieldValue.__table__.c
_VALUES_OF_USERS = select(
    _VALUES.user_profile_id, _VALUES.field_id, _VALUES.value, _VALUES.rendered_value
).where(_VALUES.user_profile_id.in_(bindparam("user_ids", expanding=True)))


def profile_data_for_users(session: Session, user_ids: Sequence[int]) -> dict[int, dict[str, dict[str, str]]]:
    """Map each user ID to ``{field_id: {value, rendered_value?}}`` for the fields they filled."""
    result: dict[int, dict[str, dict[str, str]]] = defaultdict(dict)
    if not user_ids:
        return result
    for user_id, field_id, value, rendered_value in session.execute(
        _VALUES_OF_USERS, {"user_ids": list(user_ids)}
    ):
        entry = {"value": value}
        if rendered_value is not None:
            entry["rendered_value"] = rendered_value
        result[user_id][str(field_id)] = entry
    return result


def select_choices(field: CustomProfileField) -> dict[str, Any]:
    try:
        data = orjson.loads(field.field_data or "{}")
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}
