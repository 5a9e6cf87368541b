"""Navigation views: a user's pinned or hidden built-in views and custom views of the left sidebar."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class NavigationView(Base):
    __tablename__ = "navigation_view"
    __table_args__ = (
        UniqueConstraint("user_profile_id", "fragment", name="uq_navigation_view_user_profile_id_fragment"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    # The URL hash the view opens, e.g. "inbox" or "narrow/is/starred"; the view's API key.
    fragment: Mapped[str] = mapped_column(Text)
    is_pinned: Mapped[bool] = mapped_column(default=False)
    # Only custom views have a name; built-in views are named by the client.
    name: Mapped[str | None] = mapped_column(Text, default=None)
