"""Server-rendered HTML pages outside the API: sign-up through an invitation, password reset,
confirming a new email address. Each is a Starlette route whose work runs in a thread."""

from __future__ import annotations

from starlette.routing import Route

from palaver.services import Services
from palaver.web_pages.accounts import account_routes
from palaver.web_pages.signup import signup_routes


def web_page_routes(services: Services) -> list[Route]:
    return [*signup_routes(services), *account_routes(services)]
