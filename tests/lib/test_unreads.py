"""``unread_msgs`` (POST /register): the grouped computation gives what a plain one, message
by message, gives."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.conversation_muting import conversation_muting
from palaver.lib.unreads import unread_msgs_state
from palaver.models import UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.messages import ANY_MENTION_FLAGS, Message, MessageFlag, UserMessage
from palaver.services import Services
from tests import helpers
from tests.helpers import Api, SeededRealm, assert_json_success


def plain_unread_msgs(session: Session, user: UserProfile) -> dict[str, Any]:
    """The same object from one look-up per unread message (no bound: the history is small)."""
    rows = session.execute(
        select(Message, UserMessage.flags)
        .join(UserMessage, UserMessage.message_id == Message.id)
        .where(UserMessage.user_profile_id == user.id)
        .order_by(Message.id)
    ).all()
    muting = conversation_muting(session, user.id)
    topics: dict[tuple[int, str], list[int]] = defaultdict(list)
    people: dict[int, list[int]] = defaultdict(list)
    groups: dict[str, list[int]] = defaultdict(list)
    mentions = []
    count = 0
    for message, flags in rows:
        if flags & MessageFlag.READ:
            continue
        if message.is_channel_message:
            stream = session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
            topics[(stream.id, message.subject)].append(message.id)
            muted = muting.is_muted(stream.id, message.recipient_id, message.subject)
            count += not muted
            if flags & MessageFlag.MENTIONED or (flags & ANY_MENTION_FLAGS and not muted):
                mentions.append(message.id)
            continue
        count += 1
        if flags & ANY_MENTION_FLAGS:
            mentions.append(message.id)
        members = sorted(
            session.scalars(
                select(Subscription.user_profile_id).where(Subscription.recipient_id == message.recipient_id)
            )
        )
        others = [uid for uid in members if uid != user.id]
        if len(others) <= 1:
            people[others[0] if others else user.id].append(message.id)
        else:
            groups[",".join(map(str, members))].append(message.id)
    return {
        "count": count,
        "pms": [
            {"other_user_id": other, "sender_id": other, "unread_message_ids": ids}
            for other, ids in sorted(people.items())
        ],
        "streams": [
            {"stream_id": stream_id, "topic": topic, "unread_message_ids": ids}
            for (stream_id, topic), ids in sorted(topics.items())
        ],
        "huddles": [
            {"user_ids_string": key, "unread_message_ids": ids} for key, ids in sorted(groups.items())
        ],
        "mentions": mentions,
        "old_unreads_missing": False,
    }


def test_unread_msgs_match_a_plain_computation(api: Api, realm: SeededRealm, services: Services) -> None:
    hamlet, othello, cordelia, iago = realm.hamlet, realm.othello, realm.cordelia, realm.iago
    everyone = [hamlet.id, othello.id, cordelia.id, iago.id]
    for name in ("Verona", "Denmark"):
        assert_json_success(
            api.post(
                iago, "users/me/subscriptions", {"subscriptions": [{"name": name}], "principals": everyone}
            )
        )
    denmark = assert_json_success(api.get(hamlet, "get_stream_id", {"stream": "Denmark"}))["stream_id"]
    verona = assert_json_success(api.get(hamlet, "get_stream_id", {"stream": "Verona"}))["stream_id"]
    subscription = {"subscription_data": [{"stream_id": denmark, "property": "is_muted", "value": True}]}
    assert_json_success(api.post(hamlet, "users/me/subscriptions/properties", subscription))
    for stream_id, topic, policy in ((verona, "quiet", 1), (denmark, "followed", 3)):
        body = {"stream_id": stream_id, "topic": topic, "visibility_policy": policy}
        assert_json_success(api.post(hamlet, "user_topics", body))

    def channel(sender: helpers.TestUser, to: str, topic: str, content: str) -> None:
        body = {"type": "stream", "to": to, "topic": topic, "content": content}
        assert_json_success(api.post(sender, "messages", body))

    def direct(sender: helpers.TestUser, to: list[helpers.TestUser], content: str) -> None:
        body = {"type": "direct", "to": [u.id for u in to], "content": content}
        assert_json_success(api.post(sender, "messages", body))

    # Conversations interleaved over time, each of them several times: topics differing
    # only in case, muted topics and channels with direct and wildcard mentions, one-on-one
    # conversations both ways, a conversation with oneself and groups.
    for round_ in range(3):
        channel(othello, "Verona", "open", f"hello {round_}")
        channel(cordelia, "Verona", "Open", "@**all** look")
        channel(othello, "Verona", "quiet", "@**King Hamlet** psst")
        channel(cordelia, "Verona", "quiet", "@**all** everyone")
        direct(othello, [hamlet], "hi")
        channel(iago, "Denmark", "anything", "@**all** rotten")
        channel(iago, "Denmark", "followed", "@**all** news")
        direct(cordelia, [hamlet, othello], "the three of us")
        direct(hamlet, [hamlet], "a note to myself")
        direct(iago, [hamlet, othello, cordelia], "all four")
        direct(hamlet, [othello], "reply")
        direct(cordelia, [hamlet], "@**King Hamlet** hey")
    with services.db.session() as session:
        for person in (hamlet, othello, cordelia, iago):
            user = session.get_one(UserProfile, person.id)
            got = unread_msgs_state(session, user, allow_empty_topic_name=True)
            assert got == plain_unread_msgs(session, user), person.email
            assert got["count"] and got["streams"]
        hamlets = unread_msgs_state(
            session, session.get_one(UserProfile, hamlet.id), allow_empty_topic_name=True
        )
    # What the comparison covers, from Hamlet's side: muted messages listed, not counted.
    assert hamlets["pms"] and hamlets["huddles"] and hamlets["mentions"]
    listed = sum(len(c["unread_message_ids"]) for key in ("streams", "pms", "huddles") for c in hamlets[key])
    assert hamlets["count"] < listed
