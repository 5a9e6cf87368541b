"""Onboarding steps: the one-time notices a user has not dismissed yet."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.models.onboarding_steps import OnboardingStep

# The one-time notices clients show until the user dismisses them, in display order. (No
# navigation tour video: this server hosts none, so navigation_tour_video_url is null.)
ONE_TIME_NOTICES = (
    "visibility_policy_banner",
    "intro_inbox_view_modal",
    "intro_recent_view_modal",
    "first_stream_created_banner",
    "jump_to_conversation_banner",
    "non_interleaved_view_messages_fading",
    "interleaved_view_messages_fading",
    "intro_resolve_topic",
)


def seen_steps(session: Session, user_id: int) -> set[str]:
    return set(
        session.scalars(
            select(OnboardingStep.onboarding_step).where(OnboardingStep.user_profile_id == user_id)
        )
    )


def pending_onboarding_steps(session: Session, user_id: int) -> list[dict[str, Any]]:
    seen = seen_steps(session, user_id)
    return [{"type": "one_time_notice", "name": name} for name in ONE_TIME_NOTICES if name not in seen]
