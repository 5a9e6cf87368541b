"""Message reports: POST /messages/{message_id}/report and the moderation request channel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from palaver.app import create_app
from palaver.lib import metrics
from palaver.lib.message_reports import MAX_REPORTED_SNIPPET_LENGTH
from palaver.services import build_services
from tests.api.edit_helpers import bot_messages
from tests.api.test_channels import create_channel, ids
from tests.api.test_messages_send import send_dm, send_stream
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser

NOT_ENABLED = "Message reporting is not enabled in this organization."


def mention(user: TestUser) -> str:
    return f"@_**{user.full_name}|{user.id}**"


def moderation_channel(api: Api, realm: SeededRealm) -> int:
    stream_id = create_channel(api, realm.iago, "reports", ids(realm, "iago", "shiva"), invite_only=True)
    assert_json_success(api.patch(realm.iago, "realm", {"moderation_request_channel_id": stream_id}))
    return stream_id


def report(api: Api, user: TestUser, message_id: int, report_type: str = "spam", **extra: Any) -> Any:
    return api.post(user, f"messages/{message_id}/report", {"report_type": report_type, **extra})


def notices(api: Api, realm: SeededRealm, stream_id: int, topic: str) -> list[dict[str, Any]]:
    return bot_messages(api, realm.iago, stream_id, topic)


def test_setting_in_register_and_events(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    def setting() -> int:
        state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
        value: int = state["realm_moderation_request_channel_id"]
        return value

    assert setting() == -1
    stream_id = moderation_channel(api, realm)
    assert setting() == stream_id
    [(event, users)] = events.of_type("realm", "update")
    assert event == {
        "type": "realm",
        "op": "update",
        "property": "moderation_request_channel_id",
        "value": stream_id,
    }
    assert realm.hamlet.id in users
    # A public channel cannot take reports; nor can the channel become public while it does.
    public = create_channel(api, realm.iago, "open")
    assert_json_error(
        api.patch(realm.iago, "realm", {"moderation_request_channel_id": public}),
        "Moderation request channel must be private.",
    )
    assert_json_error(
        api.patch(realm.iago, f"streams/{stream_id}", {"is_private": "false"}),
        "Moderation request channel must be private.",
    )
    assert_json_error(
        api.patch(realm.iago, "realm", {"moderation_request_channel_id": 999999}), "Invalid channel ID"
    )
    assert_json_error(
        api.patch(realm.hamlet, "realm", {"moderation_request_channel_id": -1}),
        "Must be an organization administrator",
    )
    assert_json_success(api.patch(realm.iago, "realm", {"moderation_request_channel_id": -1}))
    assert setting() == -1


def test_channel_message_report_reaches_moderators(api: Api, realm: SeededRealm) -> None:
    stream_id = moderation_channel(api, realm)
    lounge = create_channel(api, realm.othello, "lounge", ids(realm, "othello", "hamlet"))
    message_id = send_stream(api, realm.othello, lounge, "chat", "buy ```cheap``` pills")
    assert_json_success(report(api, realm.hamlet, message_id, "spam", description="Unsolicited ads"))
    [notice] = notices(api, realm, stream_id, "Othello, the Moor of Venice moderation")
    content = notice["content"]
    header, _, rest = content.partition("\n")
    assert header.startswith(
        f"{mention(realm.hamlet)} reported a message sent by {mention(realm.othello)} at <time:"
    )
    assert header.endswith(">.")
    assert rest == (
        "```quote\n**Spam**. Unsolicited ads\n```\n\n"
        f"```` spoiler Original message at #**lounge>chat@{message_id}**\nbuy ```cheap``` pills\n````"
    )
    # Moderators read it; the reporter, not subscribed to the private channel, cannot.
    fetched = api.get(realm.hamlet, f"messages/{notice['id']}")
    assert_json_error(fetched, "Invalid message(s)")


def test_direct_message_reports(api: Api, realm: SeededRealm) -> None:
    stream_id = moderation_channel(api, realm)
    one = send_dm(api, realm.othello, [realm.hamlet], "rude")
    assert_json_success(report(api, realm.hamlet, one, "harassment"))
    # Reporting one's own message names whom it went to.
    own = send_dm(api, realm.hamlet, [realm.othello], "oops")
    assert_json_success(report(api, realm.hamlet, own, "other", description="I regret this"))
    group = send_dm(api, realm.othello, [realm.hamlet, realm.cordelia], "hey all")
    assert_json_success(report(api, realm.cordelia, group, "norms", description=""))
    othello = [n["content"] for n in notices(api, realm, stream_id, "Othello, the Moor of Venice moderation")]
    [hamlets] = [n["content"] for n in notices(api, realm, stream_id, "King Hamlet moderation")]
    assert othello[0].startswith(
        f"{mention(realm.hamlet)} reported a direct message sent by {mention(realm.othello)} at <time:"
    )
    assert "**Harassment**. \n" in othello[0]
    dm_ids = ",".join(str(i) for i in sorted([realm.hamlet.id, realm.othello.id]))
    assert f"[Original message](http://{realm.host}/#narrow/dm/{dm_ids}-dm/near/{one})" in othello[0]
    recipients = sorted([mention(realm.hamlet), mention(realm.cordelia)])
    assert f"sent by {mention(realm.othello)} to {recipients[0]} and {recipients[1]} at" in othello[1]
    assert "-group/near/" in othello[1]
    assert hamlets.startswith(
        f"{mention(realm.hamlet)} reported a direct message sent by {mention(realm.hamlet)} "
        f"to {mention(realm.othello)} at"
    )
    assert "**Other reason**. I regret this" in hamlets


def test_bad_reports_are_refused_and_change_nothing(api: Api, realm: SeededRealm) -> None:
    lounge = create_channel(api, realm.othello, "lounge", ids(realm, "othello", "hamlet"))
    message_id = send_stream(api, realm.othello, lounge, "chat", "hello")
    assert_json_error(report(api, realm.hamlet, message_id), NOT_ENABLED)
    stream_id = moderation_channel(api, realm)
    assert_json_error(report(api, realm.hamlet, message_id, "rude"), "Invalid report_type")
    assert_json_error(
        api.post(realm.hamlet, f"messages/{message_id}/report"), "Missing 'report_type' argument"
    )
    assert_json_error(report(api, realm.hamlet, message_id, "other"), "An explanation is required.")
    assert_json_error(
        report(api, realm.hamlet, message_id, description="x" * 1001),
        "description is too long (limit: 1000 characters)",
    )
    # Unknown, and hidden from the reporter: the same answer.
    assert_json_error(report(api, realm.hamlet, 999999999), "Invalid message(s)")
    private = create_channel(api, realm.iago, "secret", ids(realm, "iago"), invite_only=True)
    hidden = send_stream(api, realm.iago, private, "t", "classified")
    assert_json_error(report(api, realm.hamlet, hidden), "Invalid message(s)")
    assert_json_error(report(api, realm.hamlet, 2**40), "Invalid message(s)")
    assert not bot_messages(api, realm.iago, stream_id, "Othello, the Moor of Venice moderation")
    # Once the channel is archived, reporting is off again.
    assert_json_success(api.delete(realm.iago, f"streams/{stream_id}"))
    assert_json_error(report(api, realm.hamlet, message_id), NOT_ENABLED)


def test_long_messages_are_truncated(api: Api, realm: SeededRealm) -> None:
    stream_id = moderation_channel(api, realm)
    lounge = create_channel(api, realm.othello, "lounge", ids(realm, "othello", "hamlet"))
    message_id = send_stream(api, realm.othello, lounge, "chat", "y" * 9999)
    assert_json_success(report(api, realm.hamlet, message_id, "other", description="d" * 1000))
    [notice] = notices(api, realm, stream_id, "Othello, the Moor of Venice moderation")
    assert "\n[message truncated]\n```" in notice["content"]
    snippet = notice["content"].split(" spoiler ", 1)[1].split("\n", 1)[1]
    assert snippet.count("y") == MAX_REPORTED_SNIPPET_LENGTH - len("\n[message truncated]")


@pytest.fixture
def report_limited(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = make_test_settings(
        database_url, tmp_path, rate_limiting=True, message_report_rate_limit="2/86400"
    )
    with TestClient(create_app(settings, build_services(settings)), base_url="http://palaver.test") as client:
        yield client


def test_reports_are_rate_limited(report_limited: TestClient, realm: SeededRealm) -> None:
    api = Api(report_limited, realm)
    moderation_channel(api, realm)
    lounge = create_channel(api, realm.othello, "lounge", ids(realm, "othello", "hamlet"))
    message_id = send_stream(api, realm.othello, lounge, "chat", "hello")
    assert_json_success(report(api, realm.hamlet, message_id))
    assert_json_success(report(api, realm.hamlet, message_id))
    refused = metrics.RATE_LIMITED.labels("message_report")
    before = refused._value.get()
    assert_json_error(
        report(api, realm.hamlet, message_id), "API usage exceeded rate limit", 429, "RATE_LIMIT_HIT"
    )
    # Counted for operators under the limit's own name, like the API and sign-in limits.
    assert refused._value.get() == before + 1
    # Per reporter.
    assert_json_success(report(api, realm.othello, message_id))


def test_guests_report_only_what_they_can_read(api: Api, realm: SeededRealm) -> None:
    stream_id = moderation_channel(api, realm)
    # A public channel the guest is not in: its messages are not the guest's to read.
    lounge = create_channel(api, realm.othello, "lounge", ids(realm, "othello"))
    unseen = send_stream(api, realm.othello, lounge, "chat", "members only")
    assert_json_error(report(api, realm.polonius, unseen), "Invalid message(s)")
    to_guest = send_dm(api, realm.othello, [realm.polonius], "hello guest")
    assert_json_success(report(api, realm.polonius, to_guest, "harassment"))
    [notice] = notices(api, realm, stream_id, "Othello, the Moor of Venice moderation")
    assert notice["content"].startswith(f"{mention(realm.polonius)} reported a direct message")
