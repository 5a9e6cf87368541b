"""New people join the realm's default channels as part of their creation."""

from __future__ import annotations

from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success


def test_created_user_is_subscribed_to_default_channels(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    created = assert_json_success(
        api.post(
            realm.iago, "channels/create", {"name": "welcome", "subscribers": [], "is_default_stream": True}
        )
    )
    stream_id = created.get("id") or created.get("stream_id")
    events.clear()
    body = assert_json_success(
        api.post(
            realm.iago,
            "users",
            {"email": f"newbie@{realm.string_id}.example.com", "password": "pw123456", "full_name": "Newbie"},
        )
    )
    new_id = body["user_id"]
    added = [e for e, users in events.of_type("subscription", "add") if users == [new_id]]
    assert [s["stream_id"] for s in added[0]["subscriptions"]] == [stream_id]
    # The person arrives before their subscription, so clients can name them in peer_add.
    kinds = [(e["type"], e.get("op")) for _, e, _ in events.published]
    assert kinds.index(("realm_user", "add")) < kinds.index(("subscription", "add"))
