"""POST and DELETE /messages/{message_id}/reactions: emoji resolution, errors, access, events."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from palaver.models.messages import MessageFlag, UserMessage
from palaver.services import Services
from tests.api.test_realm_emoji import upload as upload_emoji
from tests.client import TestClient
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success, seed_realm
from tests.helpers import TestUser as User


def _subscribe(api: Api, owner: User, name: str, members: list[User], **options: Any) -> None:
    assert_json_success(
        api.post(
            owner,
            "users/me/subscriptions",
            {"subscriptions": [{"name": name}], "principals": [u.id for u in members], **options},
        )
    )


def _send_to_channel(api: Api, sender: User, channel: str, content: str = "hello") -> int:
    body = assert_json_success(
        api.post(sender, "messages", {"type": "stream", "to": channel, "topic": "lunch", "content": content})
    )
    return int(body["id"])


def _send_direct(api: Api, sender: User, to: list[User]) -> int:
    body = assert_json_success(
        api.post(sender, "messages", {"type": "private", "to": [u.id for u in to], "content": "psst"})
    )
    return int(body["id"])


@pytest.fixture
def verona_message(api: Api, realm: SeededRealm) -> int:
    """A message in a public channel of iago, hamlet and othello (cordelia is not in it)."""
    _subscribe(api, realm.iago, "Verona", [realm.iago, realm.hamlet, realm.othello])
    return _send_to_channel(api, realm.hamlet, "Verona")


def _reactions(api: Api, user: User, message_id: int) -> list[dict[str, Any]]:
    body = assert_json_success(api.get(user, f"messages/{message_id}"))
    reactions: list[dict[str, Any]] = body["message"]["reactions"]
    return reactions


def _react(api: Api, user: User, message_id: int, **params: str) -> httpx.Response:
    return api.post(user, f"messages/{message_id}/reactions", params)


def _unreact(api: Api, user: User, message_id: int, **params: str) -> httpx.Response:
    return api.delete(user, f"messages/{message_id}/reactions", params)


# -- adding -------------------------------------------------------------------------------


def test_add_by_name_resolves_the_code(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="octopus"))
    assert _reactions(api, realm.hamlet, verona_message) == [
        {
            "emoji_name": "octopus",
            "emoji_code": "1f419",
            "reaction_type": "unicode_emoji",
            "user_id": realm.othello.id,
        }
    ]


def test_bots_react_with_a_name_only(api: Api, realm: SeededRealm) -> None:
    _subscribe(api, realm.hamlet, "bots", [realm.hamlet, realm.default_bot])
    message_id = _send_to_channel(api, realm.hamlet, "bots")
    assert_json_success(_react(api, realm.default_bot, message_id, emoji_name="+1"))
    (reaction,) = _reactions(api, realm.hamlet, message_id)
    assert reaction["emoji_code"] == "1f44d" and reaction["emoji_name"] == "+1"


def test_add_with_code_and_type(api: Api, realm: SeededRealm, verona_message: int) -> None:
    response = _react(
        api,
        realm.othello,
        verona_message,
        emoji_name="thumbs_up",
        emoji_code="1f44d",
        reaction_type="unicode_emoji",
    )
    assert_json_success(response)
    (reaction,) = _reactions(api, realm.othello, verona_message)
    assert (reaction["emoji_name"], reaction["emoji_code"]) == ("thumbs_up", "1f44d")


def test_zulip_extra_emoji(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="zulip"))
    (reaction,) = _reactions(api, realm.othello, verona_message)
    assert reaction["reaction_type"] == "zulip_extra_emoji" and reaction["emoji_code"] == "zulip"


def test_joining_a_reaction_under_another_alias_keeps_its_name(
    api: Api, realm: SeededRealm, verona_message: int
) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="thumbs_up"))
    assert_json_success(_react(api, realm.iago, verona_message, emoji_name="+1"))
    reactions = _reactions(api, realm.hamlet, verona_message)
    assert {(r["emoji_name"], r["user_id"]) for r in reactions} == {
        ("thumbs_up", realm.othello.id),
        ("thumbs_up", realm.iago.id),
    }


def test_reacting_twice_is_an_error_even_under_an_alias(
    api: Api, realm: SeededRealm, verona_message: int
) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="+1"))
    for name in ("+1", "thumbs_up"):
        assert_json_error(
            _react(api, realm.othello, verona_message, emoji_name=name),
            "Reaction already exists.",
            code="REACTION_ALREADY_EXISTS",
        )
    assert len(_reactions(api, realm.othello, verona_message)) == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"emoji_name": "nosuchemoji"}, "Emoji 'nosuchemoji' does not exist"),
        ({"emoji_name": ""}, "Emoji '' does not exist"),
        (
            {"emoji_name": "smile", "emoji_code": "zzzz", "reaction_type": "unicode_emoji"},
            "Invalid emoji code",
        ),
        (
            {"emoji_name": "tada", "emoji_code": "1f604", "reaction_type": "unicode_emoji"},
            "Invalid emoji name.",
        ),
        (
            {"emoji_name": "smile", "emoji_code": "1f604", "reaction_type": "sticker"},
            "Invalid emoji type.",
        ),
        (
            {"emoji_name": "party", "emoji_code": "12", "reaction_type": "realm_emoji"},
            "Invalid custom emoji.",
        ),
        (
            {"emoji_name": "zulip", "emoji_code": "1f604", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji code",
        ),
        (
            {"emoji_name": "smile", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji name.",
        ),
    ],
)
def test_invalid_emoji(
    api: Api, realm: SeededRealm, verona_message: int, params: dict[str, str], message: str
) -> None:
    assert_json_error(_react(api, realm.othello, verona_message, **params), message, code="BAD_REQUEST")
    assert _reactions(api, realm.othello, verona_message) == []


def test_emoji_name_is_required(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_error(
        _react(api, realm.othello, verona_message, emoji_code="1f604"),
        "Missing 'emoji_name' argument",
        code="REQUEST_VARIABLE_MISSING",
    )


def test_inaccessible_messages_look_missing(
    api: Api, realm: SeededRealm, client: TestClient, services: Services
) -> None:
    _subscribe(api, realm.iago, "secret", [realm.iago, realm.hamlet], invite_only=True)
    private_channel = _send_to_channel(api, realm.hamlet, "secret")
    direct = _send_direct(api, realm.hamlet, [realm.othello])
    other_realm = seed_realm(services)
    other_api = Api(client, other_realm)
    _subscribe(other_api, other_realm.iago, "Elsewhere", [other_realm.iago])
    foreign = _send_to_channel(other_api, other_realm.iago, "Elsewhere")

    for message_id in (private_channel, direct, foreign, 999_999_999, 2**40):
        for request in (_react, _unreact):
            assert_json_error(
                request(api, realm.cordelia, message_id, emoji_name="smile"), "Invalid message(s)"
            )


def test_unauthenticated(api: Api, verona_message: int) -> None:
    response = api.post(None, f"messages/{verona_message}/reactions", {"emoji_name": "smile"})
    assert response.status_code == 401


# -- removing ------------------------------------------------------------------------------


def test_remove_by_name_and_by_code(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="smile"))
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="tada"))
    assert_json_success(_unreact(api, realm.othello, verona_message, emoji_name="smile"))
    assert [r["emoji_name"] for r in _reactions(api, realm.othello, verona_message)] == ["tada"]
    assert_json_success(
        _unreact(api, realm.othello, verona_message, emoji_code="1f389", reaction_type="unicode_emoji")
    )
    assert _reactions(api, realm.othello, verona_message) == []


def test_remove_only_ones_own_reaction(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="smile"))
    assert_json_error(
        _unreact(api, realm.iago, verona_message, emoji_name="smile"),
        "Reaction doesn't exist.",
        code="REACTION_DOES_NOT_EXIST",
    )
    assert len(_reactions(api, realm.othello, verona_message)) == 1


def test_remove_errors(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_error(
        _unreact(api, realm.othello, verona_message, emoji_name="smile"),
        "Reaction doesn't exist.",
        code="REACTION_DOES_NOT_EXIST",
    )
    assert_json_error(
        _unreact(api, realm.othello, verona_message),
        "At least one of the following arguments must be present: emoji_name, emoji_code",
    )
    assert_json_error(
        _unreact(api, realm.othello, verona_message, emoji_name="nosuchemoji"),
        "Emoji 'nosuchemoji' does not exist",
    )


def test_remove_zulip_extra_emoji_by_name(api: Api, realm: SeededRealm, verona_message: int) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="zulip"))
    assert_json_success(_unreact(api, realm.othello, verona_message, emoji_name="zulip"))
    assert _reactions(api, realm.othello, verona_message) == []


# -- events and history ------------------------------------------------------------------------


def test_events_reach_everyone_who_has_the_message(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder
) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="tada"))
    assert_json_success(_unreact(api, realm.othello, verona_message, emoji_name="tada"))
    (added, add_to), (removed, remove_to) = events.of_type("reaction")
    expected = {
        "type": "reaction",
        "message_id": verona_message,
        "emoji_name": "tada",
        "emoji_code": "1f389",
        "reaction_type": "unicode_emoji",
        "user_id": realm.othello.id,
        "user": {
            "user_id": realm.othello.id,
            "email": realm.othello.email,
            "full_name": realm.othello.full_name,
        },
    }
    assert added == {**expected, "op": "add"}
    assert removed == {**expected, "op": "remove"}
    audience = sorted([realm.iago.id, realm.hamlet.id, realm.othello.id])
    assert add_to == audience and remove_to == audience


def test_direct_message_reactions_go_to_its_participants(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    message_id = _send_direct(api, realm.hamlet, [realm.othello])
    assert_json_success(_react(api, realm.othello, message_id, emoji_name="heart"))
    ((event, user_ids),) = events.of_type("reaction", "add")
    assert event["emoji_code"] == "2764"
    assert user_ids == sorted([realm.hamlet.id, realm.othello.id])


def test_reacting_from_channel_history_makes_a_historical_row(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder, services: Services
) -> None:
    # Cordelia never received the message but may read the public channel's history.
    assert_json_success(_react(api, realm.cordelia, verona_message, emoji_name="smile"))
    with services.db.session() as session:
        flags = session.scalars(
            select(UserMessage.flags).where(
                UserMessage.user_profile_id == realm.cordelia.id, UserMessage.message_id == verona_message
            )
        ).one()
    assert flags & MessageFlag.HISTORICAL and flags & MessageFlag.READ
    ((_, user_ids),) = events.of_type("reaction", "add")
    assert realm.cordelia.id in user_ids
    # From now on she hears of others' reactions too.
    events.clear()
    assert_json_success(_react(api, realm.hamlet, verona_message, emoji_name="smile"))
    ((_, user_ids),) = events.of_type("reaction", "add")
    assert realm.cordelia.id in user_ids


def test_subscribers_who_joined_later_hear_of_reactions(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder
) -> None:
    _subscribe(api, realm.iago, "Verona", [realm.polonius])
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="smile"))
    ((_, user_ids),) = events.of_type("reaction", "add")
    assert realm.polonius.id in user_ids


def test_failed_requests_send_no_events(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder
) -> None:
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="smile"))
    events.clear()
    _react(api, realm.othello, verona_message, emoji_name="smile")
    _react(api, realm.othello, verona_message, emoji_name="nosuchemoji")
    _unreact(api, realm.othello, verona_message, emoji_name="tada")
    assert events.of_type("reaction") == []


# -- custom emoji ----------------------------------------------------------------------------


def _upload_emoji(api: Api, user: User, name: str) -> str:
    assert_json_success(upload_emoji(api, user, name))
    body = assert_json_success(api.get(user, "realm/emoji"))
    (emoji_id,) = [i for i, e in body["emoji"].items() if e["name"] == name and not e["deactivated"]]
    return str(emoji_id)


def test_custom_emoji_reactions(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder
) -> None:
    party = _upload_emoji(api, realm.iago, "party")
    # Given only by name, a custom emoji wins over the Unicode emoji of the same name.
    smile = _upload_emoji(api, realm.iago, "smile")
    events.clear()
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="party"))
    assert_json_success(
        _react(
            api,
            realm.hamlet,
            verona_message,
            emoji_name="party",
            emoji_code=party,
            reaction_type="realm_emoji",
        )
    )
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="smile"))
    reactions = _reactions(api, realm.othello, verona_message)
    assert [(r["emoji_name"], r["emoji_code"], r["reaction_type"], r["user_id"]) for r in reactions] == [
        ("party", party, "realm_emoji", realm.othello.id),
        ("party", party, "realm_emoji", realm.hamlet.id),
        ("smile", smile, "realm_emoji", realm.othello.id),
    ]
    added = [e for e, _ in events.of_type("reaction", "add")]
    assert [(e["emoji_name"], e["emoji_code"], e["reaction_type"]) for e in added] == [
        ("party", party, "realm_emoji"),
        ("party", party, "realm_emoji"),
        ("smile", smile, "realm_emoji"),
    ]

    assert_json_success(_unreact(api, realm.othello, verona_message, emoji_name="party"))
    assert_json_success(
        _unreact(api, realm.othello, verona_message, emoji_code=smile, reaction_type="realm_emoji")
    )
    assert [r["user_id"] for r in _reactions(api, realm.othello, verona_message)] == [realm.hamlet.id]
    removed = [e for e, _ in events.of_type("reaction", "remove")]
    assert [(e["emoji_code"], e["reaction_type"]) for e in removed] == [
        (party, "realm_emoji"),
        (smile, "realm_emoji"),
    ]


def test_invalid_custom_emoji(
    api: Api, realm: SeededRealm, verona_message: int, client: TestClient, services: Services
) -> None:
    party = _upload_emoji(api, realm.iago, "party")
    other_realm = seed_realm(services)
    elsewhere = _upload_emoji(Api(client, other_realm), other_realm.iago, "party")
    realm_emoji = "realm_emoji"
    for params, message in (
        (
            {"emoji_name": "party", "emoji_code": "999999", "reaction_type": realm_emoji},
            "Invalid custom emoji.",
        ),
        (
            {"emoji_name": "party", "emoji_code": "party", "reaction_type": realm_emoji},
            "Invalid custom emoji.",
        ),
        (
            {"emoji_name": "party", "emoji_code": elsewhere, "reaction_type": realm_emoji},
            "Invalid custom emoji.",
        ),
        (
            {"emoji_name": "tada", "emoji_code": party, "reaction_type": realm_emoji},
            "Invalid custom emoji name.",
        ),
    ):
        assert_json_error(_react(api, realm.othello, verona_message, **params), message)
    assert _reactions(api, realm.othello, verona_message) == []


def test_deactivated_custom_emoji(
    api: Api, realm: SeededRealm, verona_message: int, events: EventRecorder
) -> None:
    party = _upload_emoji(api, realm.iago, "party")
    assert_json_success(_react(api, realm.othello, verona_message, emoji_name="party"))
    assert_json_success(_react(api, realm.cordelia, verona_message, emoji_name="party"))
    assert_json_success(api.delete(realm.iago, "realm/emoji/party"))
    events.clear()

    by_code = {"emoji_name": "party", "emoji_code": party, "reaction_type": "realm_emoji"}
    # No new reaction with it, on a message that does not have one yet...
    other_message = _send_to_channel(api, realm.hamlet, "Verona")
    assert_json_error(
        _react(api, realm.hamlet, other_message, **by_code), "This custom emoji has been deactivated."
    )
    assert_json_error(
        _react(api, realm.hamlet, other_message, emoji_name="party"), "Emoji 'party' does not exist"
    )
    assert _reactions(api, realm.hamlet, other_message) == []
    # ...but one already there may still gain votes, as clients show it.
    assert_json_success(_react(api, realm.hamlet, verona_message, **by_code))

    # Existing reactions with it can be removed, by code or by name.
    assert_json_success(
        _unreact(api, realm.othello, verona_message, emoji_code=party, reaction_type="realm_emoji")
    )
    assert_json_success(_unreact(api, realm.cordelia, verona_message, emoji_name="party"))
    assert_json_error(
        _unreact(api, realm.cordelia, verona_message, emoji_name="party"), "Emoji 'party' does not exist"
    )
    assert [r["user_id"] for r in _reactions(api, realm.hamlet, verona_message)] == [realm.hamlet.id]
    assert [(e["op"], e["user_id"], e["emoji_code"]) for e, _ in events.of_type("reaction")] == [
        ("add", realm.hamlet.id, party),
        ("remove", realm.othello.id, party),
        ("remove", realm.cordelia.id, party),
    ]
