"""Events leave only after commit; a failed write leaves no rows and no events."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from palaver.actions.users import do_change_full_name, do_change_user_role
from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError
from palaver.models import Role, UserProfile
from palaver.models.requester import Requester
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
            do_change_user_role(session, user, Role.OWNER, acting_user=Requester.of(acting))
    assert events.published == []
    with services.db.session() as session:
        name = session.scalar(select(UserProfile.full_name).where(UserProfile.id == realm.hamlet.id))
        assert name == "King Hamlet"


def test_owners_demoting_each_other_at_once_leave_one_owner(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session:
        iago = session.get(UserProfile, realm.iago.id)
        desdemona = session.get(UserProfile, realm.desdemona.id)
        assert iago is not None and desdemona is not None
        do_change_user_role(session, iago, Role.OWNER, acting_user=Requester.of(desdemona))
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def demote(target_id: int, actor_id: int) -> None:
        with services.db.session() as session:
            target = session.get(UserProfile, target_id)
            actor = session.get(UserProfile, actor_id)
            assert target is not None and actor is not None
            barrier.wait()
            try:
                do_change_user_role(session, target, Role.MEMBER, acting_user=Requester.of(actor))
                outcomes.append("demoted")
            except JsonableError as error:
                outcomes.append(error.msg)

    threads = [
        threading.Thread(target=demote, args=(realm.iago.id, realm.desdemona.id)),
        threading.Thread(target=demote, args=(realm.desdemona.id, realm.iago.id)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The second to go finds its actor is no longer an owner.
    assert sorted(outcomes) == ["Must be an organization owner", "demoted"]
    with services.db.session() as session:
        owners = session.scalars(
            select(UserProfile.id).where(
                UserProfile.realm_id == realm.id, UserProfile.role == Role.OWNER, UserProfile.is_active
            )
        ).all()
    assert len(owners) == 1


def test_a_failing_publish_neither_fails_the_write_nor_drops_other_events(
    services: Services, realm: SeededRealm, events: EventRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    failures = 0

    def broken_listener(realm_id: int, event: dict[str, object], user_ids: object) -> None:
        nonlocal failures
        if event["type"] == "realm_user" and failures == 0:
            failures += 1
            raise RuntimeError("queue backend hiccup")

    # Registered before the recorder, so the recorder would miss events if publishing stopped.
    services.bus.remove_listener(events)
    services.bus.add_listener(broken_listener)
    services.bus.add_listener(events)
    try:
        with services.db.session() as session:
            hamlet = session.get(UserProfile, realm.hamlet.id)
            othello = session.get(UserProfile, realm.othello.id)
            assert hamlet is not None and othello is not None
            with transaction(session):
                do_change_full_name(session, hamlet, "Hamlet, Prince")
                do_change_full_name(session, othello, "Othello, General")
    finally:
        services.bus.remove_listener(broken_listener)
    assert failures == 1
    assert "Could not publish a committed RealmUserUpdate event" in caplog.text
    with services.db.session() as session:
        names = set(
            session.scalars(
                select(UserProfile.full_name).where(UserProfile.id.in_([realm.hamlet.id, realm.othello.id]))
            )
        )
    assert names == {"Hamlet, Prince", "Othello, General"}
    # The second rename's event still reached its clients.
    assert [e["person"]["full_name"] for e, _ in events.of_type("realm_user", "update")][-1:] == [
        "Othello, General"
    ]
