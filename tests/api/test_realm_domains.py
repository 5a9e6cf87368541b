"""Allowed domains: GET/POST /realm/domains, PATCH/DELETE /realm/domains/{domain}."""

from __future__ import annotations

from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def domains(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = assert_json_success(api.get(user, "realm/domains"))["domains"]
    return result


def test_add_change_remove(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    everyone = sorted(u.id for u in realm.users.values())
    body = assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": " Example.COM ", "allow_subdomains": False})
    )
    assert body["new_domain"][1] == "example.com"
    assert isinstance(body["new_domain"][0], int)
    assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": "acme.org", "allow_subdomains": True})
    )
    assert domains(api, realm.polonius) == [
        {"domain": "acme.org", "allow_subdomains": True},
        {"domain": "example.com", "allow_subdomains": False},
    ]
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_domains"]}))
    assert state["realm_domains"] == domains(api, realm.hamlet)
    adds = events.of_type("realm_domains", "add")
    assert [(e["realm_domain"], users) for e, users in adds] == [
        ({"domain": "example.com", "allow_subdomains": False}, everyone),
        ({"domain": "acme.org", "allow_subdomains": True}, everyone),
    ]

    events.clear()
    assert_json_success(api.patch(realm.desdemona, "realm/domains/example.com", {"allow_subdomains": True}))
    [(event, users)] = events.of_type("realm_domains", "change")
    assert event["realm_domain"] == {"domain": "example.com", "allow_subdomains": True}
    assert users == everyone
    # Setting the same value again changes nothing and tells nobody.
    events.clear()
    assert_json_success(api.patch(realm.desdemona, "realm/domains/example.com", {"allow_subdomains": True}))
    assert events.published == []

    assert_json_success(api.delete(realm.desdemona, "realm/domains/acme.org"))
    [(event, users)] = events.of_type("realm_domains", "remove")
    assert event["domain"] == "acme.org"
    assert users == everyone
    assert domains(api, realm.iago) == [{"domain": "example.com", "allow_subdomains": True}]


@pytest.mark.parametrize("user", ["iago", "shiva", "hamlet", "polonius", "default_bot"])
def test_only_owners_change_domains(api: Api, realm: SeededRealm, events: EventRecorder, user: str) -> None:
    assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": "a.com", "allow_subdomains": False})
    )
    events.clear()
    actor = realm.users[user]
    msg = "Must be an organization owner"
    assert_json_error(api.post(actor, "realm/domains", {"domain": "b.com", "allow_subdomains": False}), msg)
    assert_json_error(api.patch(actor, "realm/domains/a.com", {"allow_subdomains": True}), msg)
    assert_json_error(api.delete(actor, "realm/domains/a.com"), msg)
    assert events.published == []
    assert domains(api, actor) == [{"domain": "a.com", "allow_subdomains": False}]


@pytest.mark.parametrize(
    ("domain", "msg"),
    [
        ("", "Invalid domain: Domain can't be empty."),
        ("localhost", "Invalid domain: Domain must have at least one dot (.)"),
        ("a." * 127 + "com", "Invalid domain: Domain is too long"),
        (".example.com", "Invalid domain: Domain cannot start or end with a dot (.)"),
        ("example.com.", "Invalid domain: Domain cannot start or end with a dot (.)"),
        ("example..com", "Invalid domain: Consecutive '.' are not allowed."),
        ("-a.example.com", "Invalid domain: Subdomains cannot start or end with a '-'."),
        ("a_b.example.com", "Invalid domain: Domain can only have letters, numbers, '.' and '-'s."),
        ("exämple.com", "Invalid domain: Domain can only have letters, numbers, '.' and '-'s."),
    ],
)
def test_invalid_domains(api: Api, realm: SeededRealm, events: EventRecorder, domain: str, msg: str) -> None:
    assert_json_error(
        api.post(realm.desdemona, "realm/domains", {"domain": domain, "allow_subdomains": False}), msg
    )
    assert domains(api, realm.desdemona) == []
    assert events.published == []


def test_errors(api: Api, realm: SeededRealm) -> None:
    owner = realm.desdemona
    assert_json_success(api.post(owner, "realm/domains", {"domain": "a.com", "allow_subdomains": False}))
    assert_json_error(
        api.post(owner, "realm/domains", {"domain": "A.com", "allow_subdomains": True}),
        "The domain a.com is already a part of your organization.",
    )
    assert_json_error(
        api.post(owner, "realm/domains", {"domain": "b.com"}), "Missing 'allow_subdomains' argument"
    )
    assert_json_error(api.patch(owner, "realm/domains/a.com", {}), "Missing 'allow_subdomains' argument")
    assert_json_error(
        api.patch(owner, "realm/domains/a.com", {"allow_subdomains": "yes"}),
        'Argument "allow_subdomains" is not valid JSON.',
    )
    assert_json_error(
        api.patch(owner, "realm/domains/b.com", {"allow_subdomains": True}),
        "No entry found for domain b.com.",
    )
    assert_json_error(api.delete(owner, "realm/domains/b.com"), "No entry found for domain b.com.")


def test_domains_are_per_realm(api: Api, realm: SeededRealm, client: Any, services: Any) -> None:
    from tests.helpers import seed_realm

    other = Api(client, seed_realm(services))
    assert_json_success(
        other.post(other.realm.desdemona, "realm/domains", {"domain": "a.com", "allow_subdomains": False})
    )
    assert domains(api, realm.desdemona) == []
    assert_json_error(api.delete(realm.desdemona, "realm/domains/a.com"), "No entry found for domain a.com.")
    assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": "a.com", "allow_subdomains": True})
    )


def test_removing_the_last_domain_lifts_the_restriction(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    for domain in ("a.com", "b.com"):
        assert_json_success(
            api.post(realm.desdemona, "realm/domains", {"domain": domain, "allow_subdomains": False})
        )
    assert_json_success(api.patch(realm.desdemona, "realm", {"emails_restricted_to_domains": True}))
    everyone = sorted(u.id for u in realm.users.values())
    events.clear()

    assert_json_success(api.delete(realm.desdemona, "realm/domains/a.com"))
    assert events.of_type("realm") == []
    assert_json_success(api.delete(realm.desdemona, "realm/domains/b.com"))
    # The realm change comes first, as in Zulip.
    assert [(e["type"], users) for _, e, users in events.published[-2:]] == [
        ("realm", everyone),
        ("realm_domains", everyone),
    ]
    [(event, _)] = events.of_type("realm", "update")
    assert event == {
        "type": "realm",
        "op": "update",
        "property": "emails_restricted_to_domains",
        "value": False,
    }
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm"]}))
    assert state["realm_emails_restricted_to_domains"] is False

    # Without the restriction, the last domain leaves no realm change behind.
    assert_json_success(
        api.post(realm.desdemona, "realm/domains", {"domain": "c.com", "allow_subdomains": False})
    )
    events.clear()
    assert_json_success(api.delete(realm.desdemona, "realm/domains/c.com"))
    assert events.of_type("realm") == []
    assert len(events.of_type("realm_domains", "remove")) == 1
