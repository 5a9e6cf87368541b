"""Administrators' writes to custom profile field definitions.

Every change sends the whole list (a custom_profile_fields event) to every active user.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.ids import get_row
from palaver.lib.profile_field_admin import (
    DEFAULT_EXTERNAL_ACCOUNTS,
    MAX_SUMMARY_FIELDS,
    check_display_in_summary,
    check_field_data,
    check_field_type,
    check_name_and_hint,
    is_default_external_account,
)
from palaver.lib.profile_fields import format_profile_field, get_profile_fields
from palaver.lib.realm import active_user_ids
from palaver.models import CustomProfileField, UserProfile
from palaver.models.requester import Requester

_DUPLICATE = "A field with that label already exists."


def _check_admin(user: UserProfile | Requester) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


def _notify(tx: Tx, session: Session, realm_id: int) -> None:
    session.flush()
    fields = [
        ev.CustomProfileFieldPayload(**format_profile_field(f)) for f in get_profile_fields(session, realm_id)
    ]
    tx.send_event(realm_id, ev.CustomProfileFields(fields=fields), active_user_ids(session, realm_id))


def _check_summary_limit(session: Session, realm_id: int, exclude_id: int | None = None) -> None:
    query = select(func.count()).where(
        CustomProfileField.realm_id == realm_id, CustomProfileField.display_in_profile_summary
    )
    if exclude_id is not None:
        query = query.where(CustomProfileField.id != exclude_id)
    if (session.scalar(query) or 0) >= MAX_SUMMARY_FIELDS:
        raise JsonableError(
            f"Only {MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary."
        )


def _check_unique_name(session: Session, realm_id: int, name: str, exclude_id: int | None = None) -> None:
    query = select(CustomProfileField.id).where(
        CustomProfileField.realm_id == realm_id, CustomProfileField.name == name
    )
    if exclude_id is not None:
        query = query.where(CustomProfileField.id != exclude_id)
    if session.scalar(query) is not None:
        raise JsonableError(_DUPLICATE)


def access_profile_field(session: Session, realm_id: int, field_id: int) -> CustomProfileField:
    field = get_row(session, CustomProfileField, field_id)
    if field is None or field.realm_id != realm_id:
        raise JsonableError(f"Field id {field_id} not found.")
    return field


def do_create_profile_field(
    session: Session,
    user: UserProfile | Requester,
    *,
    name: str,
    hint: str,
    field_type: int,
    field_data: dict[str, Any],
    display_in_profile_summary: bool,
    required: bool,
    editable_by_user: bool,
) -> CustomProfileField:
    _check_admin(user)
    kind = check_field_type(field_type)
    stored_data = check_field_data(kind, field_data)
    if is_default_external_account(kind, field_data):
        # Default external accounts (GitHub, X) come with their own label and hint.
        defaults = DEFAULT_EXTERNAL_ACCOUNTS[field_data["subtype"]]
        name, hint = defaults["name"], defaults["hint"]
    else:
        name, hint = check_name_and_hint(name, hint)
    check_display_in_summary(kind, display_in_profile_summary)
    try:
        with transaction(session) as tx:
            if display_in_profile_summary:
                _check_summary_limit(session, user.realm_id)
            _check_unique_name(session, user.realm_id, name)
            field = CustomProfileField(
                realm_id=user.realm_id,
                name=name,
                hint=hint,
                field_type=kind,
                field_data=stored_data,
                display_in_profile_summary=display_in_profile_summary,
                required=required,
                editable_by_user=editable_by_user,
            )
            session.add(field)
            session.flush()
            # New fields come last: the order follows creation until an administrator reorders.
            field.order = field.id
            _notify(tx, session, user.realm_id)
    except IntegrityError:
        raise JsonableError(_DUPLICATE) from None
    return field


def do_update_profile_field(
    session: Session,
    user: Requester,
    field_id: int,
    *,
    name: str | None,
    hint: str | None,
    field_data: dict[str, Any] | None,
    display_in_profile_summary: bool | None,
    required: bool | None,
    editable_by_user: bool | None,
) -> None:
    _check_admin(user)
    try:
        with transaction(session) as tx:
            field = access_profile_field(session, user.realm_id, field_id)
            current_data = orjson.loads(field.field_data) if field.field_data else {}
            if is_default_external_account(field.field_type, current_data) and (name or hint):
                raise JsonableError("Default custom field cannot be updated.")
            if display_in_profile_summary:
                _check_summary_limit(session, user.realm_id, exclude_id=field.id)
                check_display_in_summary(field.field_type, True)
            if field_data is not None:
                kind = check_field_type(field.field_type)
                field.field_data = check_field_data(kind, field_data)
                if is_default_external_account(kind, field_data):
                    defaults = DEFAULT_EXTERNAL_ACCOUNTS[field_data["subtype"]]
                    field.name, field.hint = defaults["name"], defaults["hint"]
            if (name is not None or hint is not None) and not is_default_external_account(
                field.field_type, orjson.loads(field.field_data) if field.field_data else {}
            ):
                new_name, new_hint = check_name_and_hint(
                    field.name if name is None else name, field.hint if hint is None else hint
                )
                _check_unique_name(session, user.realm_id, new_name, exclude_id=field.id)
                field.name, field.hint = new_name, new_hint
            if display_in_profile_summary is not None:
                field.display_in_profile_summary = display_in_profile_summary
            if required is not None:
                field.required = required
            if editable_by_user is not None:
                field.editable_by_user = editable_by_user
            _notify(tx, session, user.realm_id)
    except IntegrityError:
        raise JsonableError(_DUPLICATE) from None


def do_remove_profile_field(session: Session, user: Requester, field_id: int) -> None:
    """Delete a field and every user's value of it."""
    _check_admin(user)
    with transaction(session) as tx:
        session.delete(access_profile_field(session, user.realm_id, field_id))
        _notify(tx, session, user.realm_id)


def do_reorder_profile_fields(session: Session, user: Requester, order: list[int]) -> None:
    _check_admin(user)
    with transaction(session) as tx:
        positions = {field_id: position for position, field_id in enumerate(order)}
        fields = get_profile_fields(session, user.realm_id)
        if any(f.id not in positions for f in fields):
            raise JsonableError("Invalid order mapping.")
        for field in fields:
            field.order = positions[field.id]
        _notify(tx, session, user.realm_id)
