"""Events leave only after commit; a failed write leaves no rows and no events."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from palaver.actions.users import do_change_full_name, do_change_user_role
from palaver.db import transaction
from palaver.lib.exceptions import JsonableError
from palaver.models import Role, UserProfile
from palaver.services import Services
from tests.helpers import EventRecorder, SeededRealm


def test_events_wait_for_the_outermost_commit(
    services: Services, realm: SeededRealm, events: EventRecorder
) -> None:
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        with transaction(session):
            do_change_full_name(session, user, "Hamlet, Prince")
            # Still inside the outer transaction: nothing may have been published yet.
            assert events.of_type("realm_user") == []
        assert len(events.of_type("realm_user", "update")) == 1


def test_rolled_back_action_sends_nothing(
    services: Services, realm: SeededRealm, events: EventRecorder
) -> None:
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        acting = session.get(UserProfile, realm.iago.id)
        assert user is not None and acting is not None
        with pytest.raises(JsonableError), transaction(session):
            do_change_full_name(session, user, "Renamed")
            # Only owners may grant the owner role, so this fails after the rename.
            do_change_user_role(session, user, Role.OWNER, acting_user=acting)
    assert events.published == []
    with services.db.session() as session:
        name = session.scalar(select(UserProfile.full_name).where(UserProfile.id == realm.hamlet.id))
        assert name == "King Hamlet"
