"""User reads: lookups, permission checks, and the User object clients receive."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from palaver.cache import active_users, realm_settings, user_group_ids
from palaver.lib.avatars import avatar_url, hosted_by_gravatar
from palaver.lib.conversations import user_ids_sharing_conversations
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.ids import get_row, storable_ids
from palaver.lib.message_flags import max_message_id
from palaver.lib.profile_fields import profile_data_for_users
from palaver.models import EmailVisibility, Realm, Role, UserProfile
from palaver.models.requester import Requester
from palaver.timeutil import to_iso

# IDs are 32-bit columns: a larger number names no user, and must not reach the database.

_DUMMY_EMAIL = re.compile(r"^user(\d+)@(.+)$")


def dummy_email(user_id: int, email_host: str) -> str:
    """The API-only address shown for a user whose real one the viewer may not see."""
    return f"user{user_id}@{email_host}"


def can_view_delivery_email(viewer: Requester | None, target: UserProfile) -> bool:
    if target.is_bot:
        return True
    if viewer is None:
        return False
    if viewer.user_id == target.id:
        return True
    match target.email_address_visibility:
        case EmailVisibility.EVERYONE:
            return True
        case EmailVisibility.MEMBERS:
            return not viewer.is_guest
        case EmailVisibility.ADMINS:
            return viewer.is_realm_admin
        case EmailVisibility.MODERATORS:
            return viewer.is_realm_admin or viewer.is_moderator
    return False


def format_user(
    target: UserProfile,
    viewer: Requester | None,
    *,
    client_gravatar: bool,
    profile_data: dict[str, dict[str, str]] | None = None,
    email_host: str | None = None,
) -> dict[str, Any]:
    """The User object of the interface, as ``viewer`` may see it.

    ``email_host`` is needed for a viewer who is not logged in (``None``).
    """
    sees_email = can_view_delivery_email(viewer, target)
    hosted_elsewhere = hosted_by_gravatar(target)
    email = target.email
    if viewer is None and not target.is_bot:
        # Visibility "everyone" means everyone in the organization; a spectator is not.
        assert email_host is not None
        email = dummy_email(target.id, email_host)
    result: dict[str, Any] = {
        "user_id": target.id,
        "delivery_email": target.delivery_email if sees_email else None,
        "email": email,
        "full_name": target.full_name,
        "date_joined": to_iso(target.date_joined),
        "is_active": target.is_active,
        "is_owner": target.role == Role.OWNER,
        "is_admin": target.is_realm_admin,
        "is_guest": target.is_guest,
        "is_bot": target.is_bot,
        "bot_type": target.bot_type,
        "bot_owner_id": target.bot_owner_id,
        "role": target.role,
        "timezone": target.timezone,
        # Clients that compute Gravatar URLs themselves need the real address to do so.
        "avatar_url": None if (client_gravatar and sees_email and hosted_elsewhere) else avatar_url(target),
        "avatar_version": target.avatar_version,
        "is_imported_stub": target.is_imported_stub,
    }
    if profile_data is not None and not target.is_bot:
        result["profile_data"] = profile_data
    return result


def format_users(
    session: Session,
    users: Sequence[UserProfile],
    viewer: Requester | None,
    *,
    client_gravatar: bool,
    include_custom_profile_fields: bool,
    email_host: str,
) -> list[dict[str, Any]]:
    data = profile_data_for_users(session, [u.id for u in users]) if include_custom_profile_fields else None
    return [
        format_user(
            u,
            viewer,
            client_gravatar=client_gravatar,
            profile_data=data.get(u.id, {}) if data is not None else None,
            email_host=email_host,
        )
        for u in users
    ]


def format_own_user(session: Session, user: UserProfile) -> dict[str, Any]:
    """GET /users/me: the User fields at top level, without the bot fields."""
    result = format_user(
        user,
        Requester.of(user),
        client_gravatar=False,
        profile_data=None if user.is_bot else profile_data_for_users(session, [user.id]).get(user.id, {}),
    )
    del result["bot_type"], result["bot_owner_id"]
    result["max_message_id"] = max_message_id(session, user)
    return result


def user_access_restricted(session: Session, viewer: Requester | None) -> bool:
    """Whether the viewer sees only some users (guests, when the realm limits them)."""
    if viewer is None or not viewer.is_guest:
        return False
    return _guest_restricted(session, viewer.realm_id, viewer.user_id)


def _guest_restricted(session: Session, realm_id: int, guest_id: int) -> bool:
    group_id = realm_settings(session, realm_id).get("can_access_all_users_group")
    return group_id is None or group_id not in user_group_ids(session, realm_id, guest_id)


def accessible_user_filter(session: Session, viewer: Requester | None) -> Any:
    """A SQL condition limiting users to those the viewer may know about.

    A restricted guest sees themselves, bots, and users they share a conversation with.
    """
    if not user_access_restricted(session, viewer):
        return True
    assert viewer is not None
    shared = user_ids_sharing_conversations(session, viewer.user_id)
    return (UserProfile.id == viewer.user_id) | UserProfile.is_bot | UserProfile.id.in_(shared)


def _may_know(session: Session, viewer: Requester, target: UserProfile) -> bool:
    """``accessible_user_filter`` for one user already loaded."""
    if not user_access_restricted(session, viewer):
        return True
    return (
        target.id == viewer.user_id
        or target.is_bot
        or target.id in user_ids_sharing_conversations(session, viewer.user_id)
    )


def user_ids_who_can_access(session: Session, target: UserProfile | Requester) -> list[int]:
    """Active users of the target's realm who may know about the target.

    Everyone, except guests whose access the realm limits and who share no conversation
    with the target; the target always knows about themselves.
    """
    active = active_users(session, target.realm_id)
    if target.is_bot:
        return list(active.all)
    realm_id = target.realm_id
    target_id = target.user_id if isinstance(target, Requester) else target.id
    restricted = {g for g in active.guests if g != target_id and _guest_restricted(session, realm_id, g)}
    if not restricted:
        return list(active.all)
    # Sharing a conversation is mutual: the target's partners, read once, not each guest's.
    partners = set(user_ids_sharing_conversations(session, target_id))
    return [user_id for user_id in active.all if user_id not in restricted or user_id in partners]


def get_users(
    session: Session,
    realm_id: int,
    viewer: Requester | None,
    user_ids: Iterable[int] | None = None,
) -> list[UserProfile]:
    query = select(UserProfile).where(UserProfile.realm_id == realm_id).order_by(UserProfile.id)
    query = query.where(accessible_user_filter(session, viewer))
    if user_ids is not None:
        query = query.where(UserProfile.id.in_(storable_ids(user_ids)))
    return list(session.scalars(query))


# Built once: ``Session.get`` builds its query per call, which costs more than the load.
_USER_BY_ID = select(UserProfile).where(UserProfile.id == bindparam("user_id"))


def load_user(session: Session, user_id: int) -> UserProfile | None:
    """The user of this ID through the ORM: the session's copy if it has one (the row an
    authentication looked up), else one query."""
    # The key ``Session.identity_key(UserProfile, user_id)`` gives, without its mapper
    # look-up (5 µs, more than the rest of a cached ``ctx.me``).
    held = session.identity_map.get((UserProfile, (user_id,), None))
    if held is not None:
        return held
    return session.scalars(_USER_BY_ID, {"user_id": user_id}).one_or_none()


def requester_user(session: Session, requester: Requester) -> UserProfile:
    """The ``UserProfile`` of a requester, for an action that writes it or a check that
    reads more than the ``Requester`` holds."""
    user = load_user(session, requester.user_id)
    if user is None:
        raise JsonableError("Invalid user ID")
    return user


def get_realm_user(session: Session, realm_id: int, user_id: int) -> UserProfile | None:
    """The user of this ID in this realm, if any (deactivated users and bots included)."""
    target = get_row(session, UserProfile, user_id)
    return target if target is not None and target.realm_id == realm_id else None


def access_user_by_id(
    session: Session,
    viewer: Requester,
    user_id: int,
    *,
    allow_deactivated: bool = False,
    allow_bots: bool = True,
    for_admin: bool = False,
) -> UserProfile:
    """Fetch a user of the viewer's realm; missing and hidden look the same.

    A deactivated user is named as such: everyone who may act on them can list them anyway.
    """
    target = get_realm_user(session, viewer.realm_id, user_id)
    if target is None or (not allow_bots and target.is_bot) or not _may_know(session, viewer, target):
        raise JsonableError("No such user")
    if not allow_deactivated and not target.is_active:
        raise JsonableError("User is deactivated")
    if for_admin and not viewer.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    return target


def access_user_by_email(session: Session, viewer: Requester, email: str, *, email_host: str) -> UserProfile:
    """Look a user up by API email, or by real email where the viewer may see it.

    The ``user<ID>@<host>`` form names any user of the realm, whatever their visibility.
    """
    lowered = email.strip().lower()
    dummy = _DUMMY_EMAIL.match(lowered)
    if dummy is not None and dummy.group(2) == email_host.lower():
        target = get_realm_user(session, viewer.realm_id, int(dummy.group(1)))
        if target is not None:
            return access_user_by_id(session, viewer, target.id, allow_deactivated=True)
    candidates = session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == viewer.realm_id,
            (func.lower(UserProfile.email) == lowered) | (func.lower(UserProfile.delivery_email) == lowered),
        )
    ).all()
    for target in candidates:
        if target.email.lower() == lowered or can_view_delivery_email(viewer, target):
            return access_user_by_id(session, viewer, target.id, allow_deactivated=True)
    raise JsonableError("No such user")


def get_user_by_delivery_email(session: Session, realm_id: int, email: str) -> UserProfile | None:
    return session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == realm_id, func.lower(UserProfile.delivery_email) == email.strip().lower()
        )
    ).one_or_none()


def active_owner_count(session: Session, realm_id: int) -> int:
    return (
        session.scalar(
            select(func.count()).where(
                UserProfile.realm_id == realm_id,
                UserProfile.is_active,
                UserProfile.role == Role.OWNER,
                UserProfile.is_bot.is_(False),
            )
        )
        or 0
    )


def active_user_count(session: Session, realm_id: int) -> int:
    """Active accounts of the realm, bots included."""
    return (
        session.scalar(select(func.count()).where(UserProfile.realm_id == realm_id, UserProfile.is_active))
        or 0
    )


def lock_realm_owners(session: Session, user: UserProfile, *others: UserProfile) -> None:
    """Serialize changes that could leave the realm without an owner; call inside the write.

    Two owners demoting (or deactivating) each other at once would each count the other
    as a remaining owner. Locking the realm row makes the second wait for the first to
    commit; the users are then reloaded so the checks see the committed roles. SQLite
    needs no lock: its writers are already serialized (BEGIN IMMEDIATE).
    """
    session.flush()  # refresh() below would drop changes not yet written
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(Realm.id).where(Realm.id == user.realm_id).with_for_update())
    for each in (user, *others):
        session.refresh(each)


def is_last_owner(session: Session, user: UserProfile | Requester) -> bool:
    """Whether the organization would have no active human owner without this user."""
    return (
        user.is_realm_owner
        and not user.is_bot
        and user.is_active
        and active_owner_count(session, user.realm_id) <= 1
    )


MAX_NAME_LENGTH = 100


def check_full_name(name: str) -> str:
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise JsonableError("Name too long!")
    if len(name) < 1:
        raise JsonableError("Name too short!")
    # Control and format characters (including invisible and bidirectional ones) let a name
    # impersonate another; the others clash with Markdown and mention syntax.
    if any(unicodedata.category(c)[0] == "C" or c in '*`\\>"@' for c in name):
        raise JsonableError("Invalid characters in name!")
    # Mentions disambiguate a name with a trailing |<user ID>; a name may not look like one.
    if re.search(r"\|\d+$", name):
        raise JsonableError("Invalid format!")
    return name


def check_email(email: str) -> str:
    email = email.strip()
    local, sep, domain = email.rpartition("@")
    if not sep or not local or "." not in domain or any(c.isspace() for c in email) or len(email) > 254:
        raise JsonableError(f"Invalid email '{email}'")
    return email


def api_email_for(settings_host: str, user: UserProfile) -> str:
    """The API email: the real one when everyone may see it, else a stable fake."""
    if user.is_bot or user.email_address_visibility == 1:
        return user.delivery_email
    return dummy_email(user.id, settings_host)
