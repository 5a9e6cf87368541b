"""Events about a user's own lists: alert words, muted users and topics, navigation views, onboarding
steps.
"""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none

# alert_words, muted_users, user_topic, muted_topics ------------------------------------------


class AlertWords(Event):
    type: Literal["alert_words"] = "alert_words"
    alert_words: list[str]


class MutedUserEntry(Payload):
    id: int
    timestamp: int


class MutedUsers(Event):
    type: Literal["muted_users"] = "muted_users"
    muted_users: list[MutedUserEntry]


class UserTopicEvent(Event):
    type: Literal["user_topic"] = "user_topic"
    stream_id: int
    topic_name: str
    last_updated: int
    visibility_policy: int


class MutedTopics(Event):
    """Legacy form of user_topic: the whole list of [channel name, topic, timestamp]."""

    type: Literal["muted_topics"] = "muted_topics"
    muted_topics: list[tuple[str, str, int]]


# navigation_view (a user's sidebar views; to the user's own clients) ------------------


class NavigationViewPayload(Payload):
    fragment: str
    is_pinned: bool
    name: str | None


class NavigationViewUpdateData(Payload):
    # Only what changed is sent.
    is_pinned: bool | None = omit_none()
    name: str | None = omit_none()


class NavigationViewAdd(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["add"] = "add"
    navigation_view: NavigationViewPayload


class NavigationViewUpdate(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["update"] = "update"
    fragment: str
    data: NavigationViewUpdateData


class NavigationViewRemove(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["remove"] = "remove"
    fragment: str


class OnboardingStepPayload(Payload):
    type: Literal["one_time_notice"] = "one_time_notice"
    name: str


class OnboardingSteps(Event):
    type: Literal["onboarding_steps"] = "onboarding_steps"
    onboarding_steps: list[OnboardingStepPayload]
