"""Errors about the request's size and pace, or the server's state, rather than its content."""

from __future__ import annotations

import math

from palaver.lib.exceptions import JsonableError


class RequestBodyTooLargeError(JsonableError):
    http_status = 413

    def __init__(self, limit_bytes: int) -> None:
        limit = (
            f"{limit_bytes // (1024 * 1024)} MiB"
            if limit_bytes >= 1024 * 1024
            else f"{limit_bytes // 1024} KiB"
        )
        super().__init__(f"Request body too large (the limit is {limit})")
        # Answered before the body was read (or partway through it): what is left of it would
        # be taken for the next request, and reading it only to throw it away holds the socket.
        self.headers["Connection"] = "close"


class RequestHeadersTooLargeError(JsonableError):
    http_status = 431

    def __init__(self) -> None:
        super().__init__("Request header fields too large")
        self.headers["Connection"] = "close"


class RequestTimeoutError(JsonableError):
    http_status = 408

    def __init__(self) -> None:
        super().__init__("The request body did not arrive in time")
        # The rest of the body may still be on its way; the connection cannot be reused.
        self.headers["Connection"] = "close"


class RequestHeadTimeoutError(RequestTimeoutError):
    def __init__(self) -> None:
        super().__init__()
        self.msg = "The request headers did not arrive in time"


class ServiceUnavailableError(JsonableError):
    """A dependency (database, Redis) or a capacity limit stops the server answering now.

    ``retry-after`` is in the envelope (as in Zulip's rate-limit errors) and the header.
    """

    http_status = 503

    def __init__(self, msg: str, retry_after: float) -> None:
        super().__init__(msg)
        self.data["retry-after"] = retry_after
        self.headers["Retry-After"] = str(max(1, math.ceil(retry_after)))


class TooManyLongPollsError(JsonableError):
    """One user holds too many parked GET /events at once (each is a socket and a task)."""

    code = "RATE_LIMIT_HIT"
    http_status = 429

    def __init__(self, retry_after: float) -> None:
        super().__init__("Too many simultaneous event polls for this user")
        self.data["retry-after"] = retry_after
        self.headers["Retry-After"] = str(max(1, math.ceil(retry_after)))


class StorageFullError(JsonableError):
    """The disk under the database or the uploads is full: nothing of the request was kept.

    507 Insufficient Storage, with ``retry-after``: the request itself was fine, and once an
    operator makes room the same request succeeds.
    """

    http_status = 507

    def __init__(self, retry_after: float) -> None:
        super().__init__("Storage full: the server has no room to save this; retry later")
        self.data["retry-after"] = retry_after
        self.headers["Retry-After"] = str(max(1, math.ceil(retry_after)))


class ConflictingWriteError(JsonableError):
    """The database refused a write that conflicts with existing data (a unique name taken
    by a concurrent request) where no check of the view's own caught it first: a 400, as the
    check's own error would have been, never a 500."""

    def __init__(self) -> None:
        super().__init__("The request conflicts with existing data; reload and try again")
