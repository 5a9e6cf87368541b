"""Writes to navigation views; the user's own clients get navigation_view events."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.navigation_views import (
    DUPLICATE_VIEW,
    access_navigation_view,
    check_fragment,
    check_name,
    check_name_allowed,
    check_unique,
    format_navigation_view,
)
from palaver.models.navigation_views import NavigationView
from palaver.models.requester import Requester


def do_add_navigation_view(
    session: Session, user: Requester, fragment: str, *, is_pinned: bool, name: str | None = None
) -> NavigationView:
    fragment, name = check_fragment(fragment), check_name(name)
    check_name_allowed(fragment, name, creating=True)
    try:
        with transaction(session) as tx:
            check_unique(session, user, fragment=fragment, name=name)
            view = NavigationView(
                user_profile_id=user.user_id, fragment=fragment, is_pinned=is_pinned, name=name
            )
            session.add(view)
            session.flush()
            payload = ev.NavigationViewPayload(**format_navigation_view(view))
            tx.send_event(user.realm_id, ev.NavigationViewAdd(navigation_view=payload), [user.user_id])
    except IntegrityError:
        # A concurrent request added the same fragment between our check and insert.
        raise JsonableError(DUPLICATE_VIEW) from None
    return view


def do_update_navigation_view(
    session: Session,
    user: Requester,
    fragment: str,
    *,
    is_pinned: bool | None = None,
    name: str | None = None,
) -> None:
    fragment, name = check_fragment(fragment), check_name(name)
    check_name_allowed(fragment, name, creating=False)
    with transaction(session) as tx:
        view = access_navigation_view(session, user, fragment)
        check_unique(session, user, name=name, other_than=view)
        if name is not None:
            view.name = name
        if is_pinned is not None:
            view.is_pinned = is_pinned
        data = ev.NavigationViewUpdateData(is_pinned=is_pinned, name=name)
        tx.send_event(
            user.realm_id, ev.NavigationViewUpdate(fragment=view.fragment, data=data), [user.user_id]
        )


def do_remove_navigation_view(session: Session, user: Requester, fragment: str) -> None:
    fragment = check_fragment(fragment)
    with transaction(session) as tx:
        view = access_navigation_view(session, user, fragment)
        session.delete(view)
        tx.send_event(user.realm_id, ev.NavigationViewRemove(fragment=view.fragment), [user.user_id])
