"""Who a request comes from: the one value authentication yields.

Every way in (an API key looked up in the database, an API key this process already knows,
a browser's session cookie) builds the same ``Requester`` with ``Requester.of`` from the
user's row, and an anonymous request has none. It is immutable and holds only what reads
and permission checks ask of the person asking: identity, realm, role, bot facts and the
three settings the hot write paths check. Whatever else a view needs of the user it loads,
and an action loads the rows it writes (``Ctx.me``).

Any committed change to the user's row replaces the realm-state cache's snapshot of the
realm's users, which ends every remembered credential of that realm
(``api/known_credentials.py``): a ``Requester`` is never older than the row it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from palaver.models.users import RoleChecks


class UserFacts(Protocol):
    """What ``Requester.of`` reads: a ``UserProfile`` or the realm cache's row of one."""

    @property
    def id(self) -> int: ...
    @property
    def realm_id(self) -> int: ...
    @property
    def email(self) -> str: ...
    @property
    def delivery_email(self) -> str: ...
    @property
    def full_name(self) -> str: ...
    @property
    def role(self) -> int: ...
    @property
    def is_active(self) -> bool: ...
    @property
    def is_bot(self) -> bool: ...
    @property
    def bot_type(self) -> int | None: ...
    @property
    def bot_owner_id(self) -> int | None: ...
    @property
    def send_private_typing_notifications(self) -> bool: ...
    @property
    def send_stream_typing_notifications(self) -> bool: ...
    @property
    def presence_enabled(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Requester(RoleChecks):
    """The authenticated user of a request, as checks read them (``is_guest`` and the other
    role questions come from ``RoleChecks``, as a ``UserProfile`` asks them)."""

    user_id: int
    realm_id: int
    email: str
    delivery_email: str
    full_name: str
    role: int
    is_active: bool
    is_bot: bool
    bot_type: int | None
    bot_owner_id: int | None
    # Settings the hot write paths check before acting (typing, presence).
    send_private_typing_notifications: bool
    send_stream_typing_notifications: bool
    presence_enabled: bool

    @classmethod
    def of(cls, user: UserFacts) -> Requester:
        return cls(
            user.id,
            user.realm_id,
            user.email,
            user.delivery_email,
            user.full_name,
            user.role,
            user.is_active,
            user.is_bot,
            user.bot_type,
            user.bot_owner_id,
            user.send_private_typing_notifications,
            user.send_stream_typing_notifications,
            user.presence_enabled,
        )
