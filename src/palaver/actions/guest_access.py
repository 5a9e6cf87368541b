"""Guests whose access to users the realm limits learn of users they gain or lose.

A restricted guest knows only the users they share a conversation with; subscribing or
unsubscribing anyone in a channel a guest is in may change that set. The guest then gets
``realm_user`` ``add`` for each user that became accessible and ``remove`` for each that
did not stay so.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx
from palaver.events import types as ev
from palaver.lib.conversations import user_ids_sharing_conversations
from palaver.lib.profile_fields import profile_data_for_users
from palaver.lib.users import format_user, user_access_restricted
from palaver.models import Role, UserProfile
from palaver.models.channels import Subscription
from palaver.models.requester import Requester


class GuestAccessTracker:
    """Records what restricted guests may see before a subscription change."""

    def __init__(
        self, session: Session, realm_id: int, recipient_ids: Iterable[int], user_ids: Iterable[int]
    ) -> None:
        self.session = session
        self.realm_id = realm_id
        in_channels = select(Subscription.user_profile_id).where(
            Subscription.recipient_id.in_(list(recipient_ids)), Subscription.active
        )
        candidates = session.scalars(
            select(UserProfile).where(
                UserProfile.realm_id == realm_id,
                UserProfile.is_active,
                UserProfile.role == Role.GUEST,
                UserProfile.id.in_(in_channels) | UserProfile.id.in_(list(user_ids)),
            )
        )
        self.guests = [g for g in candidates if user_access_restricted(session, Requester.of(g))]
        self.before = {g.id: self._accessible(g) for g in self.guests}

    def _accessible(self, guest: UserProfile) -> set[int]:
        return set(user_ids_sharing_conversations(self.session, guest.id))

    def send(self, tx: Tx) -> None:
        if not self.guests:
            return
        self.session.flush()
        for guest in self.guests:
            after = self._accessible(guest)
            lost, gained = self.before[guest.id] - after, after - self.before[guest.id]
            if not lost and not gained:
                continue
            users = {
                u.id: u
                for u in self.session.scalars(select(UserProfile).where(UserProfile.id.in_(lost | gained)))
                if not u.is_bot  # bots stay accessible to everyone
            }
            for user_id in sorted(lost):
                if user_id in users:
                    person = ev.PersonRemoved(user_id=user_id, full_name=users[user_id].full_name)
                    tx.send_event(self.realm_id, ev.RealmUserRemove(person=person), [guest.id])
            profiles = profile_data_for_users(self.session, [u for u in gained if u in users])
            for user_id in sorted(gained):
                if user_id in users:
                    target = users[user_id]
                    data = format_user(
                        target,
                        Requester.of(guest),
                        client_gravatar=False,
                        profile_data=profiles.get(user_id, {}),
                    )
                    tx.send_event(
                        self.realm_id, ev.RealmUserAdd(person=ev.RealmUserPerson(**data)), [guest.id]
                    )
