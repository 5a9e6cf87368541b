"""Marking an onboarding step as seen; the user's clients get the remaining steps."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.onboarding_steps import ONE_TIME_NOTICES, pending_onboarding_steps, seen_steps
from palaver.models.onboarding_steps import OnboardingStep
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def do_mark_onboarding_step_as_read(session: Session, user: Requester, step: str) -> None:
    if step not in ONE_TIME_NOTICES:
        raise JsonableError(f"Unknown onboarding_step: {step}")
    with transaction(session) as tx:
        if step in seen_steps(session, user.user_id):
            return
        session.add(OnboardingStep(user_profile_id=user.user_id, onboarding_step=step, timestamp=utcnow()))
        session.flush()
        steps = [ev.OnboardingStepPayload(**s) for s in pending_onboarding_steps(session, user.user_id)]
        tx.send_event(user.realm_id, ev.OnboardingSteps(onboarding_steps=steps), [user.user_id])
