"""Realm administration through the ``zulip`` client against ``palaver serve``: playgrounds,
allowed domains, custom emoji, linkifiers, profile fields, bots and bot storage."""

from __future__ import annotations

import io
from typing import Any

import pytest
import zulip

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401
from tests.images import image_bytes

pytestmark = pytest.mark.e2e


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def test_realm_administration(client: zulip.Client) -> None:  # noqa: F811
    playground = ok(
        client.call_endpoint(
            "realm/playgrounds",
            method="POST",
            request={
                "name": "Py",
                "pygments_language": "Python",
                "url_template": "https://py.example/?c={code}",
            },
        )
    )
    bad = client.call_endpoint(
        "realm/playgrounds",
        method="POST",
        request={"name": "Py2", "pygments_language": "Python", "url_template": "https://py.example/{code"},
    )
    assert (bad["result"], bad["msg"]) == ("error", "Invalid URL template.")
    ok(client.call_endpoint(f"realm/playgrounds/{playground['id']}", method="DELETE"))

    ok(
        client.call_endpoint(
            "realm/domains", method="POST", request={"domain": "example.org", "allow_subdomains": False}
        )
    )
    ok(client.call_endpoint("realm/domains/example.org", method="PATCH", request={"allow_subdomains": True}))
    domains = ok(client.call_endpoint("realm/domains", method="GET"))["domains"]
    assert {"domain": "example.org", "allow_subdomains": True} in domains
    ok(client.call_endpoint("realm/domains/example.org", method="DELETE"))

    linkifier = ok(client.add_realm_filter("#(?P<id>[0-9]+)", "https://tracker.example/{id}"))
    linkifiers = ok(client.call_endpoint("realm/linkifiers", method="GET"))["linkifiers"]
    assert {
        "id": linkifier["id"],
        "pattern": "#(?P<id>[0-9]+)",
        "url_template": "https://tracker.example/{id}",
    } in linkifiers
    ok(client.remove_realm_filter(linkifier["id"]))

    image = io.BytesIO(image_bytes(32, 32))
    image.name = "e2e.png"
    ok(client.upload_custom_emoji("e2e_tick", image))
    emoji = ok(client.get_realm_emoji())["emoji"]
    assert [e["name"] for e in emoji.values() if not e["deactivated"]] == ["e2e_tick"]
    ok(client.delete_custom_emoji("e2e_tick"))

    field = ok(
        client.call_endpoint(
            "realm/profile_fields",
            method="POST",
            request={"name": "Team", "field_type": 1, "hint": "Your team"},
        )
    )
    ok(client.update_realm_profile_field(field["id"], name="Squad"))
    other = ok(client.create_realm_profile_field(name="Desk", field_type=1))
    ok(client.reorder_realm_profile_fields(order=[other["id"], field["id"]]))
    fields = ok(client.get_realm_profile_fields())["custom_fields"]
    assert [f["name"] for f in fields] == ["Desk", "Squad"]
    ok(client.remove_realm_profile_field(other["id"]))

    bot = ok(
        client.call_endpoint("bots", method="POST", request={"full_name": "E2E Bot", "short_name": "e2e"})
    )
    bots = ok(client.call_endpoint("bots", method="GET"))["bots"]
    [mine] = [b for b in bots if b["user_id"] == bot["user_id"]]
    bot_client = zulip.Client(
        email=mine["username"], api_key=bot["api_key"], site=client.base_url.removesuffix("/api/")
    )
    ok(bot_client.call_endpoint("bot_storage", method="PUT", request={"storage": {"count": "1"}}))
    stored = ok(bot_client.call_endpoint("bot_storage", method="GET", request={"keys": ["count"]}))
    assert stored["storage"] == {"count": "1"}
    ok(client.call_endpoint(f"bots/{bot['user_id']}", method="DELETE"))
