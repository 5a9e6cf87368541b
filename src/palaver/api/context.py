"""What a view knows about its request: the services, the session and who is asking."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError, UnauthorizedError
from palaver.lib.realm_cache import cached_user
from palaver.lib.users import load_user
from palaver.models import Realm, UserProfile
from palaver.models.member import Member
from palaver.services import Services


@dataclass
class Ctx:
    """What a view knows about its request."""

    services: Services
    session: Session
    _realm: Realm | None
    _user: UserProfile | None
    client_ip: str
    user_agent: str
    # A request by known credentials (api/known_credentials.py): (user ID, realm ID), the
    # user not loaded until a view asks for ``user``.
    _identity: tuple[int, int] | None = None

    @property
    def user(self) -> UserProfile | None:
        """The authenticated user, or None (anonymous). Loaded on first use for a request by
        known credentials: views that only read use ``member``, which needs no query."""
        if self._user is None and self._identity is not None:
            user = load_user(self.session, self._identity[0])
            if user is None:
                raise UnauthorizedError()
            self._user = user
        return self._user

    @property
    def loaded_user(self) -> UserProfile | None:
        """The user if the request's authentication loaded it (never loads)."""
        return self._user

    @property
    def member(self) -> Member:
        """The authenticated user as reads need them: the cached user for a request by known
        credentials, else the loaded ``UserProfile``."""
        if self._user is None and self._identity is not None:
            user_id, realm_id = self._identity
            cached = cached_user(self.session, realm_id, user_id)
            if cached is not None:
                return cached
        return self.me

    @property
    def realm_or_none(self) -> Realm | None:
        # An authenticated request's realm is loaded on first use: most views need only
        # ``me.realm_id`` or a setting from the realm cache (``lib.realm_cache.realm_settings``).
        if self._realm is None and self.user is not None:
            self._realm = self.user.realm
        return self._realm

    @property
    def realm(self) -> Realm:
        if self.realm_or_none is None:
            raise JsonableError("There is no organization at this URL", status=404)
        return self.realm_or_none

    @property
    def me(self) -> UserProfile:
        """The authenticated user (views of authenticated endpoints only)."""
        user = self.user
        if user is None:
            raise UnauthorizedError()
        return user
