"""Saved snippets: checks, reads, and the SavedSnippet object clients receive."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import InvalidArgumentError, JsonableError, ResourceNotFoundError
from palaver.lib.ids import get_row
from palaver.lib.limits import MAX_MESSAGE_LENGTH
from palaver.models.requester import Requester
from palaver.models.saved_snippets import MAX_TITLE_LENGTH, SavedSnippet
from palaver.timeutil import to_timestamp

# A snippet is inserted into a message, so it may be as long as one.
MAX_CONTENT_LENGTH = MAX_MESSAGE_LENGTH


def check_title(title: str) -> str:
    title = title.strip()
    if not title:
        raise JsonableError("Title cannot be empty.")
    if len(title) > MAX_TITLE_LENGTH:
        raise InvalidArgumentError("title", f"title is too long (limit: {MAX_TITLE_LENGTH} characters)")
    return title


def check_content(content: str) -> str:
    if not content.strip():
        raise JsonableError("Content cannot be empty.")
    if len(content) > MAX_CONTENT_LENGTH:
        raise InvalidArgumentError("content", f"content is too long (limit: {MAX_CONTENT_LENGTH} characters)")
    return content


def access_saved_snippet(session: Session, user: Requester, saved_snippet_id: int) -> SavedSnippet:
    """The user's own snippet; another user's looks exactly like a missing one."""
    snippet = get_row(session, SavedSnippet, saved_snippet_id)
    if snippet is None or snippet.user_profile_id != user.user_id:
        raise ResourceNotFoundError("Saved snippet does not exist.")
    return snippet


def get_saved_snippets(session: Session, user_id: int) -> list[SavedSnippet]:
    return list(
        session.scalars(
            select(SavedSnippet).where(SavedSnippet.user_profile_id == user_id).order_by(SavedSnippet.id)
        )
    )


def format_saved_snippet(snippet: SavedSnippet) -> dict[str, Any]:
    return {
        "id": snippet.id,
        "title": snippet.title,
        "content": snippet.content,
        "date_created": to_timestamp(snippet.date_created),
    }
