"""Writes to saved snippets; the user's own clients get saved_snippets events."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.saved_snippets import (
    access_saved_snippet,
    check_content,
    check_title,
    format_saved_snippet,
)
from palaver.models.requester import Requester
from palaver.models.saved_snippets import SavedSnippet
from palaver.timeutil import utcnow


def _payload(snippet: SavedSnippet) -> ev.SavedSnippetPayload:
    return ev.SavedSnippetPayload(**format_saved_snippet(snippet))


def do_create_saved_snippet(session: Session, user: Requester, title: str, content: str) -> SavedSnippet:
    title, content = check_title(title), check_content(content)
    with transaction(session) as tx:
        snippet = SavedSnippet(
            user_profile_id=user.user_id, title=title, content=content, date_created=utcnow()
        )
        session.add(snippet)
        session.flush()
        tx.send_event(user.realm_id, ev.SavedSnippetsAdd(saved_snippet=_payload(snippet)), [user.user_id])
    return snippet


def do_edit_saved_snippet(
    session: Session,
    user: Requester,
    saved_snippet_id: int,
    *,
    title: str | None = None,
    content: str | None = None,
) -> None:
    if title is None and content is None:
        raise JsonableError("Either title or content must be given.")
    new_title = check_title(title) if title is not None else None
    new_content = check_content(content) if content is not None else None
    with transaction(session) as tx:
        snippet = access_saved_snippet(session, user, saved_snippet_id)
        if new_title is not None:
            snippet.title = new_title
        if new_content is not None:
            snippet.content = new_content
        session.flush()
        tx.send_event(user.realm_id, ev.SavedSnippetsUpdate(saved_snippet=_payload(snippet)), [user.user_id])


def do_delete_saved_snippet(session: Session, user: Requester, saved_snippet_id: int) -> None:
    with transaction(session) as tx:
        snippet = access_saved_snippet(session, user, saved_snippet_id)
        session.delete(snippet)
        tx.send_event(
            user.realm_id, ev.SavedSnippetsRemove(saved_snippet_id=saved_snippet_id), [user.user_id]
        )
