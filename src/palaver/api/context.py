"""What a view knows about its request: the services, the session and who is asking.

Authentication (``api/routing.authenticate``, ``web/sessions.authenticate_web``, or a
remembered credential, ``api/known_credentials.py``) yields one ``Requester`` and the
realm's ID, and that is all a ``Ctx`` holds of the user: reads and permission checks take
the ``Requester``. A view whose action writes the user (or reads what the ``Requester``
does not carry) loads the ``UserProfile`` with ``ctx.me``, once per request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError, UnauthorizedError
from palaver.lib.users import load_user
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services


@dataclass
class Ctx:
    """What a view knows about its request."""

    services: Services
    session: Session
    # Who is asking: None for an anonymous request, which only endpoints registered with
    # ``auth="optional"`` or ``"none"`` see.
    requester_or_none: Requester | None
    # The organization the request is for (the requester's, or the one its host names);
    # None when the host names none (again only ``auth="optional"``/``"none"``).
    realm_id_or_none: int | None
    client_ip: str
    user_agent: str
    _user: UserProfile | None = field(default=None, repr=False)

    @property
    def requester(self) -> Requester:
        """The authenticated user (401 for an anonymous request)."""
        if self.requester_or_none is None:
            raise UnauthorizedError()
        return self.requester_or_none

    @property
    def realm_id(self) -> int:
        """The request's organization (404 when its URL names none)."""
        if self.realm_id_or_none is None:
            raise JsonableError("There is no organization at this URL", status=404)
        return self.realm_id_or_none

    @property
    def me(self) -> UserProfile:
        """The requester's ``UserProfile``, loaded in this request's session on first use:
        what an action that writes the user is given. Authentication that read the row
        (an API key looked up, a session cookie) left it in the session, so no query then."""
        if self._user is None:
            user = load_user(self.session, self.requester.user_id)
            if user is None:
                raise UnauthorizedError()
            self._user = user
        return self._user
