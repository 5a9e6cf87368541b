"""Rendering pages: one Jinja2 environment over templates/pages/, the realm of a request and the
fields a form posted."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import HTMLResponse

from palaver.config import Settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.i18n import gettext, install, set_request_language
from palaver.lib.realm import get_realm_for_host, realm_url
from palaver.models import Realm

if TYPE_CHECKING:
    from jinja2 import Environment

MIN_PASSWORD_LENGTH = 6


@lru_cache(maxsize=1)
def _environment() -> Environment:
    # Jinja2 (~2 MB) loads with the first page or email rendered, not at start-up.
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape  # noqa: PLC0415

    environment = Environment(
        loader=PackageLoader("palaver", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
    )
    install(environment)
    return environment


def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("min_password_length", MIN_PASSWORD_LENGTH)
    html = _environment().get_template(f"pages/{name}.html").render(context)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def message_page(
    realm_name: str,
    heading: str,
    text: str,
    *,
    status: int = 200,
    link_url: str | None = None,
    link_text: str = "",
    is_error: bool = False,
) -> HTMLResponse:
    return page(
        "message",
        status,
        realm_name=realm_name,
        heading=heading,
        text=text,
        link_url=link_url,
        link_text=link_text,
        is_error=is_error,
    )


def realm_or_page(session: Session, settings: Settings, host: str) -> Realm | HTMLResponse:
    try:
        realm = get_realm_for_host(session, settings, host)
    except JsonableError:
        return message_page(
            "Palaver",
            gettext("No organization here"),
            gettext("There is no organization at this URL."),
            status=404,
        )
    set_request_language(realm_language=realm.default_language)
    if realm.deactivated:
        return message_page(
            realm.name,
            gettext("Organization deactivated"),
            gettext("This organization is deactivated."),
            status=403,
        )
    return realm


def login_link(settings: Settings, realm: Realm) -> str:
    return realm_url(settings, realm) + "/"


async def posted_fields(request: Request) -> dict[str, str] | None:
    """The text fields of a POSTed form; None for a GET (the page shows its empty form)."""
    if request.method != "POST":
        return None
    data: Any = await request.form()
    return {k: v for k, v in data.items() if isinstance(v, str)}
