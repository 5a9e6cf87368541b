"""New-user announcements: the Notification Bot's notice when a human joins the realm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import update

from palaver.actions.users import do_create_user
from palaver.models import Realm, UserProfile
from palaver.services import Services
from tests.api.edit_helpers import bot_messages
from tests.api.test_channels import create_channel, ids
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def create_user(api: Api, admin: TestUser, email: str, full_name: str) -> int:
    data = {"email": email, "password": "pw-123456", "full_name": full_name}
    user_id: int = assert_json_success(api.post(admin, "users", data))["user_id"]
    return user_id


def member_names(api: Api, user: TestUser) -> set[str]:
    return {m["full_name"] for m in assert_json_success(api.get(user, "users"))["members"]}


def signups_channel(api: Api, realm: SeededRealm) -> int:
    stream_id = create_channel(api, realm.iago, "welcome", ids(realm, "iago", "hamlet"))
    assert_json_success(api.patch(realm.iago, "realm", {"signup_announcements_stream_id": stream_id}))
    return stream_id


def test_admin_created_user_is_announced(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = signups_channel(api, realm)
    events.clear()
    user_id = create_user(api, realm.iago, f"newbie@{realm.string_id}.example.com", "New Bie")
    [notice] = bot_messages(api, realm.hamlet, stream_id, "signups")
    assert notice["content"] == f"@_**New Bie|{user_id}** joined this organization."
    assert notice["subject"] == "signups"
    # Published with the creation: the person first, then the notice to the channel's readers.
    published = [(e["type"], e.get("op")) for _, e, _ in events.published]
    assert published.index(("realm_user", "add")) < published.index(("message", None))
    # Unread for the channel's subscribers (the bot, as sender, gets its own copy read).
    [(message, users)] = [(e, u) for e, u in events.of_type("message") if e["flags"] == []]
    assert sorted(users) == ids(realm, "hamlet", "iago")
    assert message["message"]["id"] == notice["id"]


def test_nothing_posted_when_unset(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = signups_channel(api, realm)
    assert_json_success(api.patch(realm.iago, "realm", {"signup_announcements_stream_id": -1}))
    events.clear()
    create_user(api, realm.iago, f"quiet@{realm.string_id}.example.com", "Quiet One")
    assert events.of_type("message") == []
    assert bot_messages(api, realm.hamlet, stream_id, "signups") == []
    # Nor is the Notification Bot made for nothing.
    assert "Notification Bot" not in member_names(api, realm.iago)


def test_bots_are_not_announced(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    signups_channel(api, realm)
    events.clear()
    data = {"full_name": "Helper", "short_name": "helper"}
    assert_json_success(api.post(realm.hamlet, "bots", data))
    assert events.of_type("message") == []


def test_archived_channel_gets_nothing(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = signups_channel(api, realm)
    assert_json_success(api.delete(realm.iago, f"streams/{stream_id}"))
    events.clear()
    create_user(api, realm.iago, f"late@{realm.string_id}.example.com", "Late Comer")
    assert events.of_type("message") == []


def test_only_human_is_not_announced(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    """As in Zulip, someone joining an organization with no other active human (its
    creator, or a realm whose people are all gone) has nobody to be announced to."""
    signups_channel(api, realm)
    with services.db.session() as session, session.begin():
        session.execute(update(UserProfile).where(UserProfile.realm_id == realm.id).values(is_active=False))
    events.clear()
    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        assert db_realm is not None
        do_create_user(
            session,
            db_realm,
            email=f"alone@{realm.string_id}.example.com",
            full_name="Alone",
            password_hash=None,
            email_host=f"{realm.string_id}.example.com",
        )
    assert events.of_type("message") == []
