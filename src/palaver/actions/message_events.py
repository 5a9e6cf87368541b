"""The ``message`` events of a message just written: one payload, shared by every group of
recipients with the same flags (a channel of thousands costs a handful of events)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from palaver.db.transaction import Tx
from palaver.events import types as ev
from palaver.lib.message_flags import flag_names
from palaver.lib.message_format import finalize_message
from palaver.models.messages import Message


@dataclass(frozen=True)
class EventRouting:
    """Who the events go to and how, from facts the sender's checks read."""

    sender_id: int
    # A public channel's plain copy is broadcast (clients reading every public channel get it).
    public_channel: bool
    local_id: str | None
    sender_queue_id: str | None


def send_message_events(
    tx: Tx,
    message: Message,
    wide: dict[str, Any],
    flags: Mapping[int, int],
    routing: EventRouting,
    submessages: Sequence[dict[str, Any]] = (),
) -> None:
    """Queue the events of ``message``, whose wide dict (``lib/message_format``) is ``wide``."""
    if submessages:
        wide["submessages"] = list(submessages)
    payload = ev.MessagePayload(
        **finalize_message(wide, apply_markdown=True, client_gravatar=False, allow_empty_topic_name=True)
    )
    by_flags: dict[int, list[int]] = defaultdict(list)
    for user_id, bits in flags.items():
        by_flags[bits].append(user_id)
    sender_id = routing.sender_id
    # The sender's own event carries local_message_id, so it goes out alone.
    local_echo = routing.local_id is not None and routing.sender_queue_id is not None
    groups: list[tuple[int, list[int], bool]] = []
    for bits, user_ids in by_flags.items():
        if local_echo and sender_id in user_ids:
            others = [u for u in user_ids if u != sender_id]
            if others:
                groups.append((bits, others, False))
            groups.append((bits, [sender_id], True))
        else:
            groups.append((bits, user_ids, False))

    names = {bits: flag_names(bits) for bits in by_flags}
    broadcast = -1
    if routing.public_channel:
        plain = [i for i, (bits, _, _) in enumerate(groups) if not names[bits]]
        broadcast = plain[0] if plain else max(range(len(groups)), key=lambda i: len(groups[i][1]))
    for index, (bits, user_ids, is_sender_echo) in enumerate(groups):
        is_broadcast = index == broadcast
        skip = (
            sorted(u for i, (_, ids, _) in enumerate(groups) if i != index for u in ids)
            if is_broadcast
            else []
        )
        internal = ev.MessageEventInternal(
            raw_content=message.content,
            sender_queue_id=routing.sender_queue_id if is_sender_echo else None,
            avatar_computable=bool(wide["avatar_computable"]),
            broadcast=is_broadcast,
            skip_broadcast_user_ids=skip,
            has_link=message.has_link,
            has_image=message.has_image,
            has_attachment=message.has_attachment,
        )
        event = ev.MessageEvent(
            message=payload,
            flags=names[bits],
            local_message_id=routing.local_id if is_sender_echo else None,
            internal=internal,
        )
        tx.send_event(message.realm_id, event, user_ids)
