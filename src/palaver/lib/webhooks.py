"""Incoming webhooks: who posts (the API key's owner), where, and which events pass.

The integrations themselves (``palaver/webhooks/``) only turn a request into notifications;
this module authenticates the ``api_key`` URL parameter, applies ``only_events`` and
``exclude_events``, and works out each notification's address.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib.exceptions import (
    InvalidAPIKeyError,
    JsonableError,
    RealmDeactivatedError,
    UnauthorizedError,
    UserDeactivatedError,
)
from palaver.lib.message_send import ChannelTarget, DirectTarget, SendTarget
from palaver.lib.passwords import has_api_key_format
from palaver.lib.realm import get_realm_for_host
from palaver.models import UserProfile
from palaver.webhooks.base import Notification, WebhookResult


def user_for_webhook_key(session: Session, settings: Settings, host: str, api_key: str) -> UserProfile:
    """The active user whose key is ``api_key``, in the realm of this host."""
    realm = get_realm_for_host(session, settings, host)
    if realm.deactivated:
        raise RealmDeactivatedError()
    api_key = api_key.strip()
    if not has_api_key_format(api_key):
        raise InvalidAPIKeyError(malformed=True)
    user = session.scalars(select(UserProfile).where(UserProfile.api_key == api_key)).one_or_none()
    if user is None:
        raise InvalidAPIKeyError()
    if user.realm_id != realm.id:
        raise UnauthorizedError("Account is not associated with this subdomain")
    if not user.is_active:
        raise UserDeactivatedError()
    return user


def _event_list(name: str, value: str | None) -> list[str] | None:
    if value is None:
        return None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        # A bare comma-separated list is what people type into a URL by hand.
        parsed = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
        raise JsonableError(f"{name} is not a list of strings")
    return parsed


def wanted_notifications(
    result: WebhookResult, only_events: str | None, exclude_events: str | None
) -> Sequence[Notification]:
    """The result's notifications, or none when the filters drop its event (``*`` globs)."""
    only = _event_list("only_events", only_events)
    exclude = _event_list("exclude_events", exclude_events)
    event = result.event_type
    if event is None:
        return result.notifications
    if only is not None and not any(fnmatchcase(event, pattern) for pattern in only):
        return ()
    if exclude is not None and any(fnmatchcase(event, pattern) for pattern in exclude):
        return ()
    return result.notifications


def webhook_target(
    sender: UserProfile, stream: str | None, topic: str | None, default_topic: str
) -> SendTarget:
    """A channel named by name or ID, or, without one, a direct message to the bot's owner."""
    if stream is None or not stream.strip():
        return DirectTarget(user_ids=(sender.bot_owner_id or sender.id,))
    stream = stream.strip()
    chosen = topic if topic is not None and topic.strip() else default_topic
    if stream.isdecimal():
        return ChannelTarget(topic=chosen, stream_id=int(stream))
    return ChannelTarget(topic=chosen, stream_name=stream)
