"""Onboarding steps (one-time notices and hints) a user has already seen."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class OnboardingStep(Base):
    __tablename__ = "onboarding_step"

    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    )
    onboarding_step: Mapped[str] = mapped_column(String(40), primary_key=True)
    timestamp: Mapped[datetime] = mapped_column(default=utcnow)
