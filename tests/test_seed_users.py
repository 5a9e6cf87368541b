"""``palaver seed-users``: bulk users and channels that the API then serves like created ones."""

from __future__ import annotations

from tests.helpers import Api, SeededRealm, assert_json_success
from tests.test_cli import Cli, cli, cli_env  # noqa: F401


def test_seed_users(cli: Cli, api: Api, realm: SeededRealm) -> None:  # noqa: F811
    result = cli(f"seed-users --realm {realm.string_id} --users 30 --channels 4 --subscriptions 2")
    assert result.code == 0, result
    # The owner joins all 4 channels; each member joins 2.
    assert "Seeded 30 users and 64 subscriptions (4 channels)" in result.out

    state = assert_json_success(
        api.post(
            realm.hamlet, "register", {"fetch_event_types": '["realm_user", "realm_user_groups", "stream"]'}
        )
    )
    seeded = [u for u in state["realm_users"] if u["full_name"].startswith("Seed User ")]
    assert len(seeded) == 30
    assert all(u["role"] == 400 and not u["is_bot"] for u in seeded)
    members = next(g for g in state["realm_user_groups"] if g["name"] == "role:members")
    assert {u["user_id"] for u in seeded} <= set(members["members"])
    channels = {s["name"]: s for s in state["streams"] if s["name"].startswith("seed channel ")}
    assert sorted(channels) == [f"seed channel {i}" for i in range(4)]
    # 30 members x 2 channels over 4 channels, plus the owner in each.
    assert sum(s["subscriber_count"] for s in channels.values()) == 64

    owner = assert_json_success(api.get(realm.desdemona, "users/me/subscriptions"))["subscriptions"]
    assert {s["name"] for s in owner} >= set(channels)

    # Running it again adds nothing.
    again = cli(f"seed-users --realm {realm.string_id} --users 30 --channels 4 --subscriptions 2")
    assert "Seeded 0 users and 0 subscriptions (4 channels)" in again.out, again


def test_seed_users_refuses_negative_counts(cli: Cli, realm: SeededRealm) -> None:  # noqa: F811
    result = cli(f"seed-users --realm {realm.string_id} --users -1")
    assert result.code != 0
    assert "--users, --channels and --subscriptions must be >= 0" in result.err
