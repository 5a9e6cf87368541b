"""Invitations: sending, revoking, resending, reusable links, and accepting one at sign-up.

Each action queues its emails into the outbox and its ``invites_changed`` event in one
transaction; the email worker sends the mail after commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext, do_send_message
from palaver.actions.notification_bot import get_or_create_notification_bot
from palaver.actions.subscriptions import add_subscriptions
from palaver.actions.users import do_create_user
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.email.outbox import queue_email
from palaver.lib.exceptions import JsonableError
from palaver.lib.invites import (
    check_can_invite,
    check_invite_as,
    check_invite_streams,
    email_domain_error,
    expiry_for,
    invite_audience,
    invite_is_live,
    invite_stream_ids,
    join_path,
    new_key,
)
from palaver.lib.message_send import DirectTarget
from palaver.lib.notification_bot import silent_mention
from palaver.lib.realm import get_realm
from palaver.lib.users import get_user_by_delivery_email
from palaver.models import Realm, UserProfile
from palaver.models.channels import Stream
from palaver.models.invites import Invitation, InviteStatus
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


@dataclass
class InviteOutcome:
    sent: list[str] = field(default_factory=list)
    # (email, reason, whether the existing account is deactivated), as the API reports them.
    skipped: list[tuple[str, str, bool]] = field(default_factory=list)


def _send_invites_changed(tx: Tx, session: Session, realm_id: int, *referrers: int) -> None:
    tx.send_event(realm_id, ev.InvitesChanged(), invite_audience(session, realm_id, *referrers))


def _queue_invitation_email(session: Session, invite: Invitation, referrer: UserProfile | Requester) -> None:
    assert invite.email is not None
    queue_email(
        session,
        realm_id=invite.realm_id,
        to=invite.email,
        template="invitation",
        context={
            "referrer_name": referrer.full_name,
            "referrer_email": referrer.delivery_email,
            "path": join_path(invite),
            "expires": f"{invite.expiry_date:%Y-%m-%d %H:%M} UTC" if invite.expiry_date else None,
        },
        from_name=referrer.full_name,
        reply_to=referrer.delivery_email,
    )


def parse_invitee_emails(text: str) -> list[str]:
    emails = [e.strip() for e in re.split(r"[,\n]", text)]
    # "Name <address>" is accepted, as mail clients paste it.
    parsed = [m.group(1).strip() if (m := re.search(r"<([^>]*)>", e)) else e for e in emails]
    return list(dict.fromkeys(e for e in parsed if e))


def _valid_address(email: str) -> bool:
    local, sep, domain = email.rpartition("@")
    return bool(sep and local and "." in domain and not any(c.isspace() for c in email) and len(email) <= 254)


def do_invite_users(
    session: Session,
    user: Requester,
    invitee_emails: str,
    *,
    invite_as: int,
    stream_ids: list[int],
    include_realm_default_subscriptions: bool,
    notify_referrer_on_join: bool,
    expires_in_minutes: int | None,
) -> InviteOutcome:
    with transaction(session) as tx:
        check_can_invite(session, user, multiuse=False)
        emails = parse_invitee_emails(invitee_emails)
        if not emails:
            raise JsonableError("You must specify at least one email address.")
        check_invite_as(user, invite_as)
        streams = check_invite_streams(session, user, stream_ids)
        now = utcnow()
        expiry = expiry_for(expires_in_minutes, now)
        realm = get_realm(session, user.realm_id)
        invalid = []
        for email in emails:
            if not _valid_address(email):
                invalid.append((email, "Invalid address.", False))
            elif (reason := email_domain_error(session, realm, email)) is not None:
                invalid.append((email, reason, False))
        if invalid:
            raise JsonableError(
                "Some emails did not validate, so we didn't send any invitations.",
                code="INVITATION_FAILED",
                errors=[list(e) for e in invalid],
                sent_invitations=False,
                license_limit_reached=False,
                daily_limit_reached=False,
            )
        outcome = InviteOutcome()
        for email in emails:
            existing = get_user_by_delivery_email(session, realm.id, email)
            if existing is not None:
                reason = (
                    "Account has been deactivated." if not existing.is_active else "Already has an account."
                )
                outcome.skipped.append((email, reason, not existing.is_active))
                continue
            invite = Invitation(
                realm_id=realm.id,
                is_multiuse=False,
                email=email,
                referred_by_id=user.user_id,
                invited_at=now,
                expiry_date=expiry,
                invited_as=invite_as,
                stream_ids=orjson.dumps(streams).decode(),
                include_realm_default_subscriptions=include_realm_default_subscriptions,
                notify_referrer_on_join=notify_referrer_on_join,
                key=new_key(),
            )
            session.add(invite)
            session.flush()
            _queue_invitation_email(session, invite, user)
            outcome.sent.append(email)
        if outcome.sent:
            _send_invites_changed(tx, session, realm.id, user.user_id)
    return outcome


def do_create_multiuse_invite(
    session: Session,
    user: Requester,
    *,
    invite_as: int,
    stream_ids: list[int],
    include_realm_default_subscriptions: bool,
    expires_in_minutes: int | None,
) -> Invitation:
    with transaction(session) as tx:
        check_can_invite(session, user, multiuse=True)
        check_invite_as(user, invite_as)
        streams = check_invite_streams(session, user, stream_ids)
        now = utcnow()
        invite = Invitation(
            realm_id=user.realm_id,
            is_multiuse=True,
            referred_by_id=user.user_id,
            invited_at=now,
            expiry_date=expiry_for(expires_in_minutes, now),
            invited_as=invite_as,
            stream_ids=orjson.dumps(streams).decode(),
            include_realm_default_subscriptions=include_realm_default_subscriptions,
            # Reusable links never notify the referrer, as in the reference.
            notify_referrer_on_join=False,
            key=new_key(),
        )
        session.add(invite)
        session.flush()
        _send_invites_changed(tx, session, user.realm_id, user.user_id)
    return invite


def do_revoke_invite(session: Session, invite: Invitation) -> None:
    with transaction(session) as tx:
        invite.status = InviteStatus.REVOKED
        _send_invites_changed(tx, session, invite.realm_id, invite.referred_by_id)


def do_resend_invite(session: Session, user: Requester, invite: Invitation) -> None:
    with transaction(session) as tx:
        if not invite_is_live(invite):
            raise JsonableError("No such invitation")
        referrer = session.get(UserProfile, invite.referred_by_id)
        invite.invited_at = utcnow()
        _queue_invitation_email(session, invite, referrer or user)
        _send_invites_changed(tx, session, invite.realm_id, invite.referred_by_id)


def do_accept_invite(
    session: Session,
    realm: Realm,
    invite: Invitation | None,
    *,
    email: str,
    full_name: str,
    password_hash: str | None,
    email_host: str,
) -> UserProfile:
    """Create the account an invitation (or open sign-up, with no invitation) is for.

    ``password_hash`` None makes an account that signs in through a provider.
    """
    with transaction(session) as tx:
        if invite is not None and not invite_is_live(invite):
            raise JsonableError("The invitation link has expired or has been revoked.")
        if invite is None and realm.invite_required:
            raise JsonableError("An invitation is required to join this organization.")
        reason = email_domain_error(session, realm, email)
        if reason is not None:
            raise JsonableError(reason)
        role = invite.invited_as if invite is not None else 400
        defaults = invite is None or invite.include_realm_default_subscriptions
        user = do_create_user(
            session,
            realm,
            email=email,
            full_name=full_name,
            password_hash=password_hash,
            email_host=email_host,
            role=role,
            default_streams=defaults,
        )
        if invite is None:
            return user
        stream_ids = invite_stream_ids(invite)
        if stream_ids:
            streams = session.scalars(
                select(Stream)
                .where(Stream.id.in_(stream_ids), Stream.realm_id == realm.id, Stream.deactivated.is_(False))
                .order_by(Stream.id)
            ).all()
            add_subscriptions(tx, session, streams, [user])
        # Every open invitation to this address is spent, whoever sent it.
        session.execute(
            update(Invitation)
            .where(
                Invitation.realm_id == realm.id,
                Invitation.is_multiuse.is_(False),
                Invitation.status == InviteStatus.ACTIVE,
                Invitation.email.is_not(None),
            )
            .where(Invitation.email.ilike(email))
            .values(status=InviteStatus.USED)
            .execution_options(synchronize_session=False)
        )
        _send_invites_changed(tx, session, realm.id, invite.referred_by_id)
        if invite.notify_referrer_on_join:
            _notify_referrer(session, realm, invite.referred_by_id, user, email_host)
    return user


def _notify_referrer(
    session: Session, realm: Realm, referrer_id: int, new_user: UserProfile, email_host: str
) -> None:
    referrer = session.get(UserProfile, referrer_id)
    if referrer is None or not referrer.is_active:
        return
    bot = get_or_create_notification_bot(session, realm, email_host)
    content = f"{silent_mention(new_user)} accepted your invitation to join {realm.name}!"
    context = SendContext(realm_url="", email_host=email_host)
    do_send_message(session, Requester.of(bot), DirectTarget(user_ids=(referrer.id,)), content, context)
