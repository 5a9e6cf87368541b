"""Errors a client sees. Each renders as the error envelope with its code and status."""

from __future__ import annotations

import math
import time
from typing import Any


class JsonableError(Exception):
    """An error whose message is safe to show the client."""

    code: str = "BAD_REQUEST"
    http_status: int = 400

    def __init__(self, msg: str, *, code: str | None = None, status: int | None = None, **data: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        if code is not None:
            self.code = code
        if status is not None:
            self.http_status = status
        self.data: dict[str, Any] = data
        self.headers: dict[str, str] = {}

    def to_dict(self) -> dict[str, Any]:
        return {"result": "error", "msg": self.msg, "code": self.code, **self.data}


class MissingArgumentError(JsonableError):
    code = "REQUEST_VARIABLE_MISSING"

    def __init__(self, var_name: str) -> None:
        super().__init__(f"Missing '{var_name}' argument", var_name=var_name)


class InvalidJSONError(JsonableError):
    code = "INVALID_JSON"

    def __init__(self, var_name: str) -> None:
        super().__init__(f'Argument "{var_name}" is not valid JSON.', var_name=var_name)


class InvalidArgumentError(JsonableError):
    code = "REQUEST_VARIABLE_INVALID"

    def __init__(self, var_name: str, msg: str | None = None) -> None:
        super().__init__(msg or f"Invalid {var_name}", var_name=var_name)


class IncompatibleParametersError(JsonableError):
    def __init__(self, parameters: list[str]) -> None:
        joined = ", ".join(parameters)
        super().__init__(f"Unsupported parameter combination: {joined}", parameters=joined)


class UnauthorizedError(JsonableError):
    """401 that invites HTTP Basic credentials."""

    code = "UNAUTHORIZED"
    http_status = 401

    def __init__(
        self,
        msg: str = "Not logged in: API authentication or user session required",
        *,
        code: str | None = None,
        realm_name: str = "palaver",
    ) -> None:
        super().__init__(msg, code=code)
        self.headers["WWW-Authenticate"] = f'Basic realm="{realm_name}"'


class InvalidAPIKeyError(UnauthorizedError):
    """A key given as a parameter (webhooks' ``api_key``) that opens no account, or that
    could not be one (``malformed``). In HTTP Basic credentials the same faults are plain
    ``UNAUTHORIZED`` answers (``api/routing.authenticate``), as in Zulip."""

    def __init__(self, *, malformed: bool = False) -> None:
        super().__init__("Malformed API key" if malformed else "Invalid API key", code="INVALID_API_KEY")


class UserDeactivatedError(UnauthorizedError):
    def __init__(self) -> None:
        super().__init__("Account is deactivated", code="USER_DEACTIVATED")


class RealmDeactivatedError(UnauthorizedError):
    def __init__(self) -> None:
        super().__init__("This organization is deactivated", code="REALM_DEACTIVATED")


class AuthenticationFailedError(JsonableError):
    code = "AUTHENTICATION_FAILED"
    http_status = 401

    def __init__(self) -> None:
        super().__init__("Your username or password is incorrect")


class OrganizationAdministratorRequiredError(JsonableError):
    def __init__(self) -> None:
        super().__init__("Must be an organization administrator")


class OrganizationOwnerRequiredError(JsonableError):
    def __init__(self) -> None:
        super().__init__("Must be an organization owner")


class ResourceNotFoundError(JsonableError):
    http_status = 404

    def __init__(self, msg: str = "Not Found") -> None:
        super().__init__(msg, code="BAD_REQUEST")


class MethodNotAllowedError(JsonableError):
    http_status = 405

    def __init__(self, allowed: list[str]) -> None:
        super().__init__("Method Not Allowed", code="BAD_REQUEST")
        self.headers["Allow"] = ", ".join(allowed)


class RateLimitedError(JsonableError):
    code = "RATE_LIMIT_HIT"
    http_status = 429

    def __init__(self, retry_after: float, limit: int, *, reset_at: float | None = None) -> None:
        super().__init__("API usage exceeded rate limit")
        self.data["retry-after"] = round(retry_after, 3)
        # Clients read Retry-After as whole seconds; round up so they never retry too early.
        self.headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
        self.headers["X-RateLimit-Limit"] = str(limit)
        self.headers["X-RateLimit-Remaining"] = "0"
        if reset_at is None:
            reset_at = time.time() + retry_after
        self.headers["X-RateLimit-Reset"] = str(math.ceil(reset_at))
