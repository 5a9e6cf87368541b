"""Reads of lib/messages.py that the send path uses in place of slower general ones."""

from __future__ import annotations

from palaver.actions.user_groups import NewUserGroup, do_create_user_group
from palaver.lib.group_settings import groups_containing_user
from palaver.lib.messages import containing_group_ids
from palaver.models import UserProfile
from palaver.services import Services
from tests.helpers import SeededRealm


def test_containing_group_ids_match_groups_containing_user(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session:
        owner = session.get_one(UserProfile, realm.desdemona.id)
        # Nested user-defined groups, which hamlet reaches through his direct one only.
        inner = do_create_user_group(session, owner, NewUserGroup("inner", "", [realm.hamlet.id]))
        outer = do_create_user_group(session, owner, NewUserGroup("outer", "", [], [inner.id]))
        do_create_user_group(session, owner, NewUserGroup("outermost", "", [], [outer.id, inner.id]))
        session.commit()
        for name, user in realm.users.items():
            assert containing_group_ids(session, user.id) == groups_containing_user(session, user.id), name
        assert {inner.id, outer.id} <= containing_group_ids(session, realm.hamlet.id)


def test_message_viewer_matches_viewer_for(services: Services, realm: SeededRealm) -> None:
    from palaver.lib.channels import viewer_for
    from palaver.lib.messages import message_viewer

    with services.db.session() as session:
        for name, user in realm.users.items():
            profile = session.get_one(UserProfile, user.id)
            assert message_viewer(session, profile) == viewer_for(session, profile), name
