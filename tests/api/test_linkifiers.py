"""Linkifiers: GET/PATCH /realm/linkifiers, POST /realm/filters, PATCH/DELETE /realm/filters/{id}."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from palaver.lib.linkifiers import linkifiers_for_realm
from palaver.lib.markdown.contract import LinkifierRef
from palaver.lib.markdown.urls import topic_links
from palaver.services import Services
from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

ISSUE = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://github.com/zulip/zulip/issues/{id}"}


def linkifiers(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = assert_json_success(api.get(user, "realm/linkifiers"))["linkifiers"]
    return result


def add(api: Api, user: helpers.TestUser, pattern: str, url_template: str) -> int:
    body = assert_json_success(
        api.post(user, "realm/filters", {"pattern": pattern, "url_template": url_template})
    )
    linkifier_id: int = body["id"]
    return linkifier_id


def test_add_update_reorder_remove(
    api: Api, realm: SeededRealm, events: EventRecorder, services: Services
) -> None:
    everyone = sorted(u.id for u in realm.users.values())
    first = add(api, realm.iago, **ISSUE)
    second = add(
        api, realm.desdemona, "PR(?P<repo>[a-z]+)-(?P<num>\\d+)", "https://x.example/{repo}/pull/{num}"
    )
    listed = linkifiers(api, realm.polonius)
    assert listed == [
        {"id": first, **ISSUE},
        {
            "id": second,
            "pattern": "PR(?P<repo>[a-z]+)-(?P<num>\\d+)",
            "url_template": "https://x.example/{repo}/pull/{num}",
        },
    ]
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_linkifiers"]})
    )
    assert state["realm_linkifiers"] == listed
    event, users = events.of_type("realm_linkifiers")[-1]
    assert event["realm_linkifiers"] == listed
    assert users == everyone

    with services.db.session() as session:
        refs = linkifiers_for_realm(session, realm.id)
    assert refs == [LinkifierRef(**ISSUE), LinkifierRef(listed[1]["pattern"], listed[1]["url_template"])]
    assert topic_links("see #12", refs) == [
        {"text": "#12", "url": "https://github.com/zulip/zulip/issues/12"}
    ]

    events.clear()
    assert_json_success(
        api.patch(
            realm.iago,
            f"realm/filters/{first}",
            {"pattern": "T(?P<id>\\d+)", "url_template": "https://t/{id}"},
        )
    )
    [(event, _)] = events.of_type("realm_linkifiers")
    assert event["realm_linkifiers"][0] == {
        "id": first,
        "pattern": "T(?P<id>\\d+)",
        "url_template": "https://t/{id}",
    }

    events.clear()
    assert_json_success(api.patch(realm.iago, "realm/linkifiers", {"ordered_linkifier_ids": [second, first]}))
    assert [f["id"] for f in linkifiers(api, realm.hamlet)] == [second, first]
    [(event, users)] = events.of_type("realm_linkifiers")
    assert [f["id"] for f in event["realm_linkifiers"]] == [second, first]
    assert users == everyone
    # A linkifier added later applies last.
    third = add(api, realm.iago, "X(?P<n>\\d+)", "https://x/{n}")
    assert [f["id"] for f in linkifiers(api, realm.hamlet)] == [second, first, third]

    events.clear()
    assert_json_success(api.delete(realm.iago, f"realm/filters/{second}"))
    assert [f["id"] for f in linkifiers(api, realm.hamlet)] == [first, third]
    [(event, _)] = events.of_type("realm_linkifiers")
    assert [f["id"] for f in event["realm_linkifiers"]] == [first, third]


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius", "default_bot"])
def test_only_admins_write(api: Api, realm: SeededRealm, events: EventRecorder, user: str) -> None:
    linkifier_id = add(api, realm.iago, **ISSUE)
    events.clear()
    actor = realm.users[user]
    msg = "Must be an organization administrator"
    assert_json_error(api.post(actor, "realm/filters", ISSUE), msg)
    assert_json_error(api.patch(actor, f"realm/filters/{linkifier_id}", ISSUE), msg)
    assert_json_error(api.delete(actor, f"realm/filters/{linkifier_id}"), msg)
    assert_json_error(api.patch(actor, "realm/linkifiers", {"ordered_linkifier_ids": [linkifier_id]}), msg)
    assert events.published == []
    assert len(linkifiers(api, actor)) == 1


@pytest.mark.parametrize(
    ("pattern", "url_template", "msg"),
    [
        ("#(?P<id>[0-9]+", "https://x/{id}", "Bad regular expression: missing ): #(?P<id>[0-9]+"),
        # RE2 refuses what would need backtracking: lookaround and backreferences.
        ("(?<=#)(?P<id>[0-9]+)", "https://x/{id}", "Bad regular expression: invalid perl operator: (?<="),
        (r"(?P<id>\w)\1", "https://x/{id}", "Bad regular expression: invalid escape sequence: \\1"),
        ("x*", "https://x/", "Bad regular expression: pattern matches the empty string"),
        ("  ", "https://x/", "Pattern cannot be blank."),
        ("#(?P<id>[0-9]+)", "https://x/{id", "Invalid URL template."),
        ("#(?P<id>[0-9]+)", "https://x/{id}}", "Invalid URL template."),
        ("#(?P<id>[0-9]+)", "https://x/{id:2}", "Invalid URL template."),
        (
            "#(?P<id>[0-9]+)",
            "https://x/{id}/{other}",
            "Group 'other' in URL template is not present in linkifier pattern.",
        ),
        (
            "#(?P<id>[0-9]+)(?P<b>x)",
            "https://x/{id}",
            "Group 'b' in linkifier pattern is not present in URL template.",
        ),
        ("a" * 1001, "https://x/", "pattern is too long (limit: 1000 characters)"),
        ("ab", "https://x/" + "a" * 1000, "url_template is too long (limit: 1000 characters)"),
    ],
)
def test_invalid(
    api: Api, realm: SeededRealm, events: EventRecorder, pattern: str, url_template: str, msg: str
) -> None:
    assert_json_error(
        api.post(realm.iago, "realm/filters", {"pattern": pattern, "url_template": url_template}), msg
    )
    linkifier_id = add(api, realm.iago, **ISSUE)
    events.clear()
    assert_json_error(
        api.patch(
            realm.iago, f"realm/filters/{linkifier_id}", {"pattern": pattern, "url_template": url_template}
        ),
        msg,
    )
    assert linkifiers(api, realm.iago) == [{"id": linkifier_id, **ISSUE}]
    assert events.published == []


def test_errors(api: Api, realm: SeededRealm) -> None:
    first = add(api, realm.iago, **ISSUE)
    second = add(api, realm.iago, "T(?P<id>\\d+)", "https://t/{id}")
    assert_json_error(
        api.post(realm.iago, "realm/filters", ISSUE), "Linkifier with this Pattern already exists."
    )
    assert_json_error(
        api.patch(realm.iago, f"realm/filters/{second}", ISSUE), "Linkifier with this Pattern already exists."
    )
    # Saving a linkifier with its own pattern is no conflict.
    assert_json_success(
        api.patch(realm.iago, f"realm/filters/{first}", {**ISSUE, "url_template": "https://y/{id}"})
    )
    for bad_id in (0, 999999, 2**31, 2**62):
        assert_json_error(api.patch(realm.iago, f"realm/filters/{bad_id}", ISSUE), "Linkifier not found.")
        assert_json_error(api.delete(realm.iago, f"realm/filters/{bad_id}"), "Linkifier not found.")
    msg = "The ordered list must enumerate all existing linkifiers exactly once"
    for order in ([first], [first, second, second], [first, second, 2**40], []):
        assert_json_error(api.patch(realm.iago, "realm/linkifiers", {"ordered_linkifier_ids": order}), msg)
    assert_json_error(
        api.patch(realm.iago, "realm/linkifiers", {}), "Missing 'ordered_linkifier_ids' argument"
    )
    assert_json_error(
        api.post(realm.iago, "realm/filters", {"pattern": "x"}), "Missing 'url_template' argument"
    )


def test_linkifiers_are_per_realm(api: Api, realm: SeededRealm, client: Any, services: Services) -> None:
    other = Api(client, helpers.seed_realm(services))
    foreign = add(other, other.realm.iago, **ISSUE)
    assert linkifiers(api, realm.iago) == []
    assert_json_error(api.delete(realm.iago, f"realm/filters/{foreign}"), "Linkifier not found.")
    assert_json_error(
        api.patch(realm.iago, "realm/linkifiers", {"ordered_linkifier_ids": [foreign]}),
        "The ordered list must enumerate all existing linkifiers exactly once",
    )
    with services.db.session() as session:
        assert isinstance(session, Session)
        assert linkifiers_for_realm(session, realm.id) == []
