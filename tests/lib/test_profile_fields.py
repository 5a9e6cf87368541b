"""``profile_data_for_users``: the custom profile field values of several users in one query."""

from __future__ import annotations

from palaver.lib.profile_fields import profile_data_for_users
from palaver.models import CustomProfileField, CustomProfileFieldValue
from palaver.services import Services
from tests.helpers import SeededRealm


def test_values_by_user_and_field_including_ones_not_yet_flushed(
    realm: SeededRealm, services: Services
) -> None:
    with services.db.session() as session:
        field = CustomProfileField(realm_id=realm.id, name="Team")
        session.add(field)
        session.flush()
        key = str(field.id)
        session.add(CustomProfileFieldValue(user_profile_id=realm.hamlet.id, field_id=field.id, value="core"))
        session.add(
            CustomProfileFieldValue(
                user_profile_id=realm.othello.id,
                field_id=field.id,
                value="**web**",
                rendered_value="<p>web</p>",
            )
        )
        # Not flushed: an action that has just written values must read them back (Session.execute
        # flushes before a statement on the table as before one on the mapped class).
        data = profile_data_for_users(session, [realm.hamlet.id, realm.othello.id, realm.iago.id])
        session.rollback()
        assert profile_data_for_users(session, []) == {}
    assert data == {
        realm.hamlet.id: {key: {"value": "core"}},
        realm.othello.id: {key: {"value": "**web**", "rendered_value": "<p>web</p>"}},
    }
