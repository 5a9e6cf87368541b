"""Code playground reads and validation."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row
from palaver.lib.url_templates import InvalidUrlTemplateError, url_template_variables
from palaver.models.playgrounds import RealmPlayground

MAX_PLAYGROUND_NAME_LENGTH = 60
MAX_PYGMENTS_LANGUAGE_LENGTH = 40
MAX_URL_TEMPLATE_LENGTH = 1000

# Pygments lexer names and aliases ("C++", "objective-c", "F#", "Python 3") use only these.
_PYGMENTS_LANGUAGE = re.compile(r"^[ a-zA-Z0-9_+\-./#]*$")


def get_playgrounds(session: Session, realm_id: int) -> list[RealmPlayground]:
    return list(
        session.scalars(
            select(RealmPlayground).where(RealmPlayground.realm_id == realm_id).order_by(RealmPlayground.id)
        )
    )


def format_playground(playground: RealmPlayground) -> dict[str, Any]:
    return {
        "id": playground.id,
        "name": playground.name,
        "pygments_language": playground.pygments_language,
        "url_template": playground.url_template,
    }


def access_playground(session: Session, realm_id: int, playground_id: int) -> RealmPlayground:
    playground = get_row(session, RealmPlayground, playground_id)
    if playground is None or playground.realm_id != realm_id:
        raise JsonableError("Invalid playground")
    return playground


def check_playground(name: str, pygments_language: str, url_template: str) -> tuple[str, str, str]:
    """The stripped values of a new playground; raises the client-facing error otherwise."""
    name = name.strip()
    pygments_language = pygments_language.strip()
    url_template = url_template.strip()
    if not name:
        raise JsonableError("Name cannot be blank.")
    if len(name) > MAX_PLAYGROUND_NAME_LENGTH:
        raise JsonableError(f"name is too long (limit: {MAX_PLAYGROUND_NAME_LENGTH} characters)")
    if not pygments_language:
        raise JsonableError("Pygments language cannot be blank.")
    if len(pygments_language) > MAX_PYGMENTS_LANGUAGE_LENGTH:
        raise JsonableError(
            f"pygments_language is too long (limit: {MAX_PYGMENTS_LANGUAGE_LENGTH} characters)"
        )
    if _PYGMENTS_LANGUAGE.match(pygments_language) is None:
        raise JsonableError("Invalid characters in pygments language")
    if len(url_template) > MAX_URL_TEMPLATE_LENGTH:
        raise JsonableError(f"url_template is too long (limit: {MAX_URL_TEMPLATE_LENGTH} characters)")
    try:
        variables = url_template_variables(url_template)
    except InvalidUrlTemplateError:
        raise JsonableError("Invalid URL template.") from None
    if variables != ["code"]:
        raise JsonableError('"code" should be the only variable present in the URL template')
    return name, pygments_language, url_template
