"""A rule machine of users of every role changing one organization through the API.

After any sequence of changes, a client that applied the events it received must hold the
same state as a fresh ``/register``, and no request may answer 5xx.
"""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from palaver.models import Role
from palaver.services import Services
from tests.api.test_register import EVENT_TYPES, FETCH
from tests.client import TestClient
from tests.events.apply import apply_event, assert_same_state
from tests.helpers import Api, SeededRealm, assert_json_success, seed_realm

PEOPLE = ["desdemona", "iago", "shiva", "hamlet", "othello", "cordelia", "polonius"]
VIEWERS = ["iago", "hamlet", "polonius"]
ROLES = [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST]
OPTIONS = {"fetch_event_types": FETCH, "event_types": EVENT_TYPES, "client_gravatar": False}

people = st.sampled_from(PEOPLE)


class Organization(RuleBasedStateMachine):
    def __init__(self, client: TestClient, services: Services) -> None:
        super().__init__()
        self.realm: SeededRealm = seed_realm(services)
        self.api = Api(client, self.realm)
        created = self.call(
            "post",
            "iago",
            "user_groups/create",
            {"name": "crew", "description": "", "members": [self.realm.hamlet.id]},
        )
        self.group_id = int(created.json()["group_id"])
        self.states = {
            name: assert_json_success(self.api.post(self.realm.users[name], "register", OPTIONS))
            for name in VIEWERS
        }

    def call(self, method: str, actor: str, path: str, data: dict[str, Any] | None = None) -> httpx.Response:
        response = self.api.request(method.upper(), self.realm.users[actor], path, data)
        assert response.status_code < 500, (method, path, data, response.text)
        return response

    def uid(self, name: str) -> int:
        return self.realm.users[name].id

    @rule(actor=people, subject=people, role=st.sampled_from(ROLES))
    def change_role(self, actor: str, subject: str, role: int) -> None:
        self.call("patch", actor, f"users/{self.uid(subject)}", {"role": role})

    @rule(actor=people, subject=people)
    def deactivate(self, actor: str, subject: str) -> None:
        self.call("delete", actor, f"users/{self.uid(subject)}")

    @rule(actor=people, subject=people)
    def reactivate(self, actor: str, subject: str) -> None:
        self.call("post", actor, f"users/{self.uid(subject)}/reactivate")

    @rule(actor=people, name=st.sampled_from(["Ann", "Bob B.", "Zoë"]))
    def rename_self(self, actor: str, name: str) -> None:
        self.call("patch", actor, "settings", {"full_name": name})

    @rule(actor=people, visibility=st.sampled_from([1, 2, 3, 4, 5]))
    def email_visibility(self, actor: str, visibility: int) -> None:
        self.call("patch", actor, "settings", {"email_address_visibility": visibility})

    @rule(actor=people, value=st.booleans())
    def clock_setting(self, actor: str, value: bool) -> None:
        self.call("patch", actor, "settings", {"twenty_four_hour_time": value})

    @rule(actor=people, subject=people, add=st.booleans())
    def group_membership(self, actor: str, subject: str, add: bool) -> None:
        change = {"add": [self.uid(subject)]} if add else {"delete": [self.uid(subject)]}
        self.call("post", actor, f"user_groups/{self.group_id}/members", change)

    def teardown(self) -> None:
        for name, state in self.states.items():
            viewer = self.realm.users[name]
            fetched = self.api.get(
                viewer, "events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
            )
            if fetched.status_code == 401:
                continue  # the viewer was deactivated: their client is logged out
            for event in assert_json_success(fetched)["events"]:
                apply_event(state, event, client_gravatar=False)
            fresh = assert_json_success(self.api.post(viewer, "register", OPTIONS))
            assert_same_state(state, fresh)


def test_replayed_events_match_a_fresh_register(client: TestClient, services: Services) -> None:
    run_state_machine_as_test(
        lambda: Organization(client, services),  # type: ignore[arg-type]  # Hypothesis calls it like the class
        settings=settings(
            max_examples=12,
            stateful_step_count=15,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
