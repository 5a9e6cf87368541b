"""Custom profile field reads and value validation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import select
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


def profile_data_for_users(session: Session, user_ids: Sequence[int]) -> dict[int, dict[str, dict[str, str]]]:
    """Map each user ID to ``{field_id: {value, rendered_value?}}`` for the fields they filled."""
    result: dict[int, dict[str, dict[str, str]]] = defaultdict(dict)
    if not user_ids:
        return result
    rows = session.scalars(
        select(CustomProfileFieldValue).where(CustomProfileFieldValue.user_profile_id.in_(list(user_ids)))
    )
    for row in rows:
        entry = {"value": row.value}
        if row.rendered_value is not None:
            entry["rendered_value"] = row.rendered_value
        result[row.user_profile_id][str(row.field_id)] = entry
    return result


def select_choices(field: CustomProfileField) -> dict[str, Any]:
    try:
        data = orjson.loads(field.field_data or "{}")
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}
