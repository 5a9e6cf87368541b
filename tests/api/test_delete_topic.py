"""POST /streams/{stream_id}/delete_topic: batches, events, permissions, complete."""

from __future__ import annotations

import itertools

from palaver.actions.delete_topic import do_delete_topic
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.requester import Requester
from palaver.services import Services
from tests.api.test_messages_send import create_channel, fetch, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def test_delete_topic(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.iago, "Denmark", [realm.iago, realm.hamlet])
    first = send_stream(api, realm.hamlet, "Denmark", "coffee", "one")
    second = send_stream(api, realm.hamlet, "Denmark", "Coffee", "two")
    kept = send_stream(api, realm.hamlet, "Denmark", "tea", "three")
    url = f"streams/{stream_id}/delete_topic"
    assert_json_error(
        api.post(realm.hamlet, url, {"topic_name": "coffee"}), "Must be an organization administrator"
    )
    events.clear()
    assert assert_json_success(api.post(realm.iago, url, {"topic_name": "coffee"}))["complete"] is True
    [(event, users)] = events.of_type("delete_message")
    assert event["message_ids"] == [first, second]
    assert (event["stream_id"], event["topic"]) == (stream_id, "Coffee")
    assert set(users) == {realm.iago.id, realm.hamlet.id}
    # The channel's first message moved on.
    [(update, _)] = events.of_type("stream", "update")
    assert (update["property"], update["value"]) == ("first_message_id", kept)
    assert [m["id"] for m in fetch(api, realm.hamlet)["messages"]] == [kept]
    # Nothing left to delete is still complete.
    assert assert_json_success(api.post(realm.iago, url, {"topic_name": "coffee"}))["complete"] is True
    assert_json_error(
        api.post(realm.iago, "streams/99999/delete_topic", {"topic_name": "x"}), "Invalid channel ID"
    )


def test_delete_topic_in_batches(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    stream_id = create_channel(api, realm.iago, "Denmark")
    ids = [send_stream(api, realm.iago, "Denmark", "big", str(i)) for i in range(5)]
    ticks = itertools.count()
    events.clear()
    with services.db.session() as session:
        iago = session.get(UserProfile, realm.iago.id)
        stream = session.get(Stream, stream_id)
        assert iago is not None and stream is not None
        requester = Requester.of(iago)
        # A clock that runs out after the first batch: the rest waits for the next call.
        complete = do_delete_topic(
            session, requester, stream, "big", batch_size=2, time_budget=0.5, clock=lambda: next(ticks)
        )
        assert complete is False
        assert [e["message_ids"] for e, _ in events.of_type("delete_message")] == [ids[3:5]]
        assert do_delete_topic(session, requester, stream, "big", batch_size=2) is True
    assert [e["message_ids"] for e, _ in events.of_type("delete_message")] == [ids[3:5], ids[1:3], ids[0:1]]
