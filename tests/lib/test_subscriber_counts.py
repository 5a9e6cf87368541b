"""subscriber_counts: active subscriptions of active users, however the count is read."""

from __future__ import annotations

from palaver.lib.channels import subscriber_counts
from palaver.services import Services
from tests.api.test_channels import create_channel, ids
from tests.helpers import Api, SeededRealm, assert_json_success


def test_counts_leave_out_deactivated_users_and_ended_subscriptions(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    everyone = create_channel(
        api, realm.hamlet, "everyone", ids(realm, "hamlet", "othello", "cordelia", "iago")
    )
    alone = create_channel(api, realm.othello, "alone", ids(realm, "othello"))
    left = create_channel(api, realm.hamlet, "left", ids(realm, "hamlet", "cordelia"))
    empty = create_channel(api, realm.hamlet, "empty", [])
    assert_json_success(api.delete(realm.cordelia, "users/me/subscriptions", {"subscriptions": ["left"]}))
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))

    with services.db.session() as session:
        counts = subscriber_counts(session, [everyone, alone, left, empty])
    # othello no longer counts anywhere; cordelia left one channel.
    assert {s: counts.get(s, 0) for s in (everyone, alone, left, empty)} == {
        everyone: 3,
        alone: 0,
        left: 1,
        empty: 0,
    }
    listed = {
        s["name"]: s["subscriber_count"]
        for s in assert_json_success(api.get(realm.hamlet, "streams"))["streams"]
        if s["name"] in ("everyone", "alone", "left", "empty")
    }
    assert listed == {"everyone": 3, "alone": 0, "left": 1, "empty": 0}
