"""PATCH /users/me/subscriptions: leave and join channels in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from palaver.actions.channel_creation import ChannelRequest, do_subscribe_by_name
from palaver.actions.new_channels import NewChannel
from palaver.actions.subscriptions import do_unsubscribe_by_name
from palaver.db.transaction import transaction
from palaver.models.requester import Requester


def do_update_subscriptions(
    session: Session,
    user: Requester,
    *,
    add: Sequence[tuple[str, str, str | None]],
    delete: Sequence[str],
) -> dict[str, Any]:
    """Unsubscribe the user from ``delete``, then subscribe them to ``add`` (name,
    description, color), creating missing channels; either failing undoes both."""
    with transaction(session):
        removed: list[str] = []
        not_removed: list[str] = []
        if delete:
            removed, not_removed = do_unsubscribe_by_name(session, user, delete)
        subscribed: dict[str, list[str]] = {}
        already: dict[str, list[str]] = {}
        if add:
            requests = [ChannelRequest(name, description, color) for name, description, color in add]
            result = do_subscribe_by_name(session, user, requests, template=NewChannel(name=""))
            subscribed, already = result.subscribed, result.already_subscribed
    return {
        "subscribed": subscribed,
        "already_subscribed": already,
        "removed": removed,
        "not_removed": not_removed,
    }
