"""Signing in through the login form with TestClient, as a browser would."""

from __future__ import annotations

import re

import httpx

from tests.client import TestClient
from tests.helpers import PASSWORD, TestUser

HIDDEN_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def form_token(client: TestClient) -> str:
    """GET the login page (which sets the csrftoken cookie) and read its hidden field."""
    page = client.get("/")
    match = HIDDEN_CSRF.search(page.text)
    assert match, page.text
    return match.group(1)


def post_login(client: TestClient, email: str, password: str = PASSWORD, **extra: str) -> httpx.Response:
    data = {"username": email, "password": password, "csrfmiddlewaretoken": form_token(client), **extra}
    response: httpx.Response = client.post("/accounts/login/", data=data, follow_redirects=False)
    return response


def log_in(client: TestClient, user: TestUser) -> str:
    """Sign ``user`` in; returns the session's CSRF token."""
    response = post_login(client, user.email)
    assert response.status_code == 302, response.text
    return str(client.cookies["csrftoken"])
