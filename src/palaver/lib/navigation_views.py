"""Navigation views: checks, reads, and the NavigationView object clients receive."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import InvalidArgumentError, JsonableError, ResourceNotFoundError
from palaver.models.navigation_views import NavigationView
from palaver.models.requester import Requester

# Views every client has; a user's row for one of these only pins or hides it.
BUILT_IN_VIEW_FRAGMENTS = frozenset(
    {
        "inbox",
        "recent",
        "feed",
        "drafts",
        "narrow/has/reaction/sender/me",
        "narrow/is/mentioned",
        "narrow/is/starred",
        "scheduled",
    }
)

# Fragments are unique per user through a B-tree index, whose entries PostgreSQL caps at
# about 2,700 bytes; 600 characters stay below that even when every one takes 4 bytes.
MAX_FRAGMENT_LENGTH = 600

DUPLICATE_VIEW = "Navigation view already exists."


def check_fragment(fragment: str) -> str:
    fragment = fragment.strip()
    if not fragment:
        raise InvalidArgumentError("fragment", "fragment cannot be blank")
    if len(fragment) > MAX_FRAGMENT_LENGTH:
        raise InvalidArgumentError(
            "fragment", f"fragment is too long (limit: {MAX_FRAGMENT_LENGTH} characters)"
        )
    return fragment


def check_name(name: str | None) -> str | None:
    if name is None:
        return None
    name = name.strip()
    if not name:
        raise InvalidArgumentError("name", "name cannot be blank")
    return name


def check_name_allowed(fragment: str, name: str | None, *, creating: bool) -> None:
    if fragment in BUILT_IN_VIEW_FRAGMENTS:
        if name is not None:
            raise JsonableError("Built-in views cannot have a custom name.")
    elif creating and name is None:
        raise JsonableError("Custom views must have a valid name.")


def check_unique(
    session: Session,
    user: Requester,
    *,
    fragment: str | None = None,
    name: str | None = None,
    other_than: NavigationView | None = None,
) -> None:
    """Refuse a second view of a fragment, or a custom name another of the user's views has."""
    for condition, given in (
        (NavigationView.fragment == fragment, fragment),
        (NavigationView.name == name, name),
    ):
        if given is None:
            continue
        query = select(NavigationView.id).where(NavigationView.user_profile_id == user.user_id, condition)
        if other_than is not None:
            query = query.where(NavigationView.id != other_than.id)
        if session.scalar(query.limit(1)) is not None:
            raise JsonableError(DUPLICATE_VIEW)


def access_navigation_view(session: Session, user: Requester, fragment: str) -> NavigationView:
    """The user's own view; no one can see or change another user's views."""
    view = session.scalar(
        select(NavigationView).where(
            NavigationView.user_profile_id == user.user_id, NavigationView.fragment == fragment
        )
    )
    if view is None:
        raise ResourceNotFoundError("Navigation view does not exist.")
    return view


def get_navigation_views(session: Session, user_id: int) -> list[NavigationView]:
    return list(
        session.scalars(
            select(NavigationView)
            .where(NavigationView.user_profile_id == user_id)
            .order_by(NavigationView.id)
        )
    )


def format_navigation_view(view: NavigationView) -> dict[str, Any]:
    return {"fragment": view.fragment, "is_pinned": view.is_pinned, "name": view.name}
