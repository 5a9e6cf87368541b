"""Reading and checking invitations, and the sign-up rules they are part of."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.channels import default_stream_ids, get_stream_by_id, has_metadata_access, viewer_for
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.lib.realm_domains import get_realm_domains
from palaver.lib.subscriptions import can_add_subscribers
from palaver.lib.user_groups import is_user_in_group
from palaver.models import Realm, Role, UserProfile
from palaver.models.channels import Stream
from palaver.models.invites import Invitation, InviteStatus
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp, utcnow

# The reference's INVITATION_LINK_VALIDITY_MINUTES default: ten days.
DEFAULT_INVITE_EXPIRY_MINUTES = 14400
INSUFFICIENT_PERMISSION = "Insufficient permission"
NO_SUCH_INVITATION = "No such invitation"
VALID_ROLES = frozenset(int(r) for r in Role)


def new_key() -> str:
    return secrets.token_hex(12)


def invite_is_live(invite: Invitation, now: datetime | None = None) -> bool:
    now = now or utcnow()
    if invite.status != InviteStatus.ACTIVE:
        return False
    return invite.expiry_date is None or invite.expiry_date > now


def join_path(invite: Invitation) -> str:
    return f"/join/{invite.key}/"


def format_invite(invite: Invitation, realm_url: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": invite.id,
        "invited_by_user_id": invite.referred_by_id,
        "invited": to_timestamp(invite.invited_at),
        "expiry_date": to_timestamp(invite.expiry_date) if invite.expiry_date is not None else None,
        "invited_as": invite.invited_as,
        "notify_referrer_on_join": invite.notify_referrer_on_join,
        "is_multiuse": invite.is_multiuse,
    }
    if invite.is_multiuse:
        data["link_url"] = realm_url + join_path(invite)
    else:
        data["email"] = invite.email
    return data


def can_manage_all_invites(user: Requester) -> bool:
    return user.is_realm_admin


def visible_invites(session: Session, user: Requester) -> list[Invitation]:
    """Unexpired, unused invitations the user may manage: all for administrators, else their own."""
    now = utcnow()
    query = select(Invitation).where(
        Invitation.realm_id == user.realm_id,
        Invitation.status == InviteStatus.ACTIVE,
        or_(Invitation.expiry_date.is_(None), Invitation.expiry_date > now),
    )
    if not can_manage_all_invites(user):
        query = query.where(Invitation.referred_by_id == user.user_id)
    return list(session.scalars(query.order_by(Invitation.id)))


def invite_audience(session: Session, realm_id: int, *extra: int) -> list[int]:
    """Who hears ``invites_changed``: administrators, who manage every invitation, and the
    referrers whose own list changed."""
    admins = session.scalars(
        select(UserProfile.id).where(
            UserProfile.realm_id == realm_id,
            UserProfile.is_active,
            UserProfile.is_bot.is_(False),
            UserProfile.role.in_([Role.OWNER, Role.ADMINISTRATOR]),
        )
    )
    return sorted(set(admins) | set(extra))


def check_invite_as(user: Requester, invite_as: int) -> None:
    if invite_as not in VALID_ROLES:
        raise JsonableError("Invalid invite_as")
    # Nobody invites someone into a role above their own; only owners create owners.
    if invite_as == Role.OWNER and not user.is_realm_owner:
        raise JsonableError(INSUFFICIENT_PERMISSION)
    if invite_as == Role.ADMINISTRATOR and not user.is_realm_admin:
        raise JsonableError(INSUFFICIENT_PERMISSION)
    if invite_as == Role.MODERATOR and not (user.is_realm_admin or user.is_moderator):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def check_can_invite(session: Session, user: Requester, *, multiuse: bool) -> None:
    """Email invitations need ``can_invite_users_group``; reusable links
    ``create_multiuse_invite_group``."""
    realm = realm_settings(session, user.realm_id)
    group_id = realm.create_multiuse_invite_group if multiuse else realm.can_invite_users_group
    if user.is_bot or not is_user_in_group(session, user.user_id, group_id):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def check_invite_streams(session: Session, user: Requester, stream_ids: list[int]) -> list[int]:
    """The channels an invitation may subscribe the new user to: ones the inviter may see,
    and either default channels or ones they may add subscribers to."""
    if not stream_ids:
        return []
    viewer = viewer_for(session, user)
    defaults = set(default_stream_ids(session, user.realm_id))
    streams: list[Stream] = []
    for stream_id in dict.fromkeys(stream_ids):
        stream = get_stream_by_id(session, user.realm_id, stream_id) if is_storable_id(stream_id) else None
        if stream is None or stream.deactivated:
            raise JsonableError(f"Invalid channel ID {stream_id}. No invites were sent.")
        if not has_metadata_access(viewer, stream):
            raise JsonableError(f"Invalid channel ID {stream_id}. No invites were sent.")
        streams.append(stream)
    for stream in streams:
        if stream.id not in defaults and not can_add_subscribers(viewer, stream):
            raise JsonableError("You do not have permission to subscribe other users to channels.")
    return [s.id for s in streams]


def expiry_for(minutes: int | None, now: datetime) -> datetime | None:
    if minutes is None:
        return None
    if minutes <= 0:
        raise JsonableError("Invalid invite_expires_in_minutes")
    return now + timedelta(minutes=minutes)


def email_domain_error(session: Session, realm: Realm, email: str) -> str | None:
    """Why the realm refuses this address at sign-up, or None."""
    domain = email.rpartition("@")[2].lower()
    if realm.emails_restricted_to_domains:
        allowed = get_realm_domains(session, realm.id)
        ok = any(
            domain == d.domain or (d.allow_subdomains and domain.endswith("." + d.domain)) for d in allowed
        )
        if not ok:
            return f"Email addresses from {domain} are not allowed in this organization."
    return None


def get_invite_by_key(session: Session, key: str) -> Invitation | None:
    return session.scalars(select(Invitation).where(Invitation.key == key)).one_or_none()


def live_invite_by_key(session: Session, realm: Realm, key: str) -> Invitation | None:
    invite = get_invite_by_key(session, key)
    if invite is None or invite.realm_id != realm.id or not invite_is_live(invite):
        return None
    return invite


def invite_stream_ids(invite: Invitation) -> list[int]:
    return [int(i) for i in orjson.loads(invite.stream_ids)]


def access_email_invite(session: Session, user: Requester, invite_id: int) -> Invitation:
    invite = session.get(Invitation, invite_id) if is_storable_id(invite_id) else None
    if invite is None or invite.realm_id != user.realm_id or invite.is_multiuse:
        raise JsonableError(NO_SUCH_INVITATION)
    if invite.status != InviteStatus.ACTIVE:
        raise JsonableError(NO_SUCH_INVITATION)
    _check_may_manage(user, invite)
    return invite


def access_multiuse_invite(session: Session, user: Requester, invite_id: int) -> Invitation:
    invite = session.get(Invitation, invite_id) if is_storable_id(invite_id) else None
    if invite is None or invite.realm_id != user.realm_id or not invite.is_multiuse:
        raise JsonableError(NO_SUCH_INVITATION)
    if invite.status == InviteStatus.REVOKED:
        raise JsonableError("Invitation has already been revoked")
    _check_may_manage(user, invite)
    return invite


def _check_may_manage(user: Requester, invite: Invitation) -> None:
    if invite.invited_as == Role.OWNER and not user.is_realm_owner:
        raise JsonableError("Must be an organization owner")
    if invite.referred_by_id != user.user_id and not can_manage_all_invites(user):
        raise JsonableError("Must be an organization administrator")


def live_invite_for_email(session: Session, realm: Realm, email: str) -> Invitation | None:
    """The newest live invitation addressed to ``email`` (which lets it join an
    invitation-only organization by signing in through a provider)."""
    rows = session.scalars(
        select(Invitation)
        .where(
            Invitation.realm_id == realm.id,
            Invitation.is_multiuse.is_(False),
            Invitation.email.is_not(None),
            Invitation.email.ilike(email),
        )
        .order_by(Invitation.id.desc())
    ).all()
    return next((invite for invite in rows if invite_is_live(invite)), None)
