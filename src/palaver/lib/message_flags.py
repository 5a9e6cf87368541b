"""Personal message flags as clients name them (``read``, ``starred``, ``mentioned``...),
and reads of the user's own message rows.

The bits are ``models/messages.MessageFlag``; changing flags is ``actions/message_flags.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from palaver.models import UserProfile
from palaver.models.messages import CLIENT_FLAGS, WILDCARD_FLAGS, MessageFlag, UserMessage

# Flags of a message the user may read but never received: read, and "historical".
DEFAULT_HISTORICAL_FLAGS = MessageFlag.READ | MessageFlag.HISTORICAL


FLAG_BITS: Mapping[str, MessageFlag] = dict(CLIENT_FLAGS)


EDITABLE_FLAGS = frozenset({"read", "starred", "collapsed"})


# Flags clients know but cannot set themselves.
READ_ONLY_FLAGS = frozenset(FLAG_BITS) - EDITABLE_FLAGS | {"wildcard_mentioned"}


# Plain ints: ``int & IntFlag`` goes through the enum machinery, a cost per flag per message.
_CLIENT_BITS = tuple((name, int(bit)) for name, bit in CLIENT_FLAGS)
_WILDCARD_BITS = int(WILDCARD_FLAGS)


def flag_names(bits: int) -> list[str]:
    """The flags clients see for a flag bitfield, with the legacy ``wildcard_mentioned``."""
    return list(_flag_names(int(bits)))


# Few distinct bitfields occur; a page of 50 messages shares a handful of them.
@lru_cache(maxsize=1024)
def _flag_names(bits: int) -> tuple[str, ...]:
    names = [name for name, bit in _CLIENT_BITS if bits & bit]
    if bits & _WILDCARD_BITS:
        names.append("wildcard_mentioned")
    return tuple(names)


def starred_message_ids(session: Session, user: UserProfile) -> list[int]:
    return list(
        session.scalars(
            select(UserMessage.message_id)
            .where(
                UserMessage.user_profile_id == user.id,
                UserMessage.flags.op("&")(int(MessageFlag.STARRED)) != 0,
            )
            .order_by(UserMessage.message_id)
        )
    )


# Built once, on the table rather than the mapped class: /register and GET /users/me ask on
# every call, and building the statement and running it through the ORM's compile step
# cost ~4x running it (~300 vs ~80 µs).
_NEWEST_OF_USER = select(func.max(UserMessage.__table__.c.message_id)).where(
    UserMessage.__table__.c.user_profile_id == bindparam("user_id")
)


def max_message_id(session: Session, user: UserProfile) -> int:
    """The newest message in the user's history; -1 before there is any."""
    newest = session.scalar(_NEWEST_OF_USER, {"user_id": user.id})
    return -1 if newest is None else int(newest)
