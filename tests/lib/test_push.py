"""Notification payloads as Zulip's mobile app parses them, their encryption, the relay's
request, and who gets notified (a matrix of settings and message kinds)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from palaver.lib.push import (
    CHANNEL,
    DIRECT_MESSAGE,
    FOLLOWED_TOPIC,
    MENTION,
    PUSH_CONTENT_LIMIT,
    STREAM_WILDCARD_MENTION,
    STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC,
    TOPIC_WILDCARD_MENTION,
    Identity,
    PushTarget,
    RecipientFacts,
    apns_payload,
    encrypt_payload,
    fcm_data,
    message_payload,
    ping_payload,
    push_content,
    push_trigger,
    relay_request,
    remove_payload,
)
from palaver.models.user_topics import VisibilityPolicy
from tests.lib.app_notifications import DESCRIPTION, Unparsable, parse_apns, parse_fcm, parse_payload
from tests.push_helpers import decrypt, new_key

REALM_URL = "http://zulip.palaver.test"
IDENTITY = Identity(REALM_URL, "Zulip Dev", 10)


# The payloads ------------------------------------------------------------------------------

CHANNEL_MESSAGE = {
    "id": 45,
    "sender_id": 6,
    "sender_full_name": "aaron",
    "avatar_url": "/user_avatars/2/abc.png?version=3",
    "timestamp": 1754385395,
    "type": "stream",
    "stream_id": 10,
    "display_recipient": "Denmark",
    "subject": "test",
    "content": '<p>Hi <span class="user-mention" data-user-id="10">@Hamlet</span> '
    '<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span></p>',
}
DIRECT = {
    "id": 46,
    "sender_id": 6,
    "sender_full_name": "aaron",
    "avatar_url": "https://secure.gravatar.com/avatar/818c?d=identicon&version=1",
    "timestamp": 1754385290,
    "type": "private",
    "display_recipient": [{"id": 10}, {"id": 6}],
    "subject": "",
    "content": "<p>test content</p>",
}


def test_channel_message_payload() -> None:
    payload = message_payload(IDENTITY, CHANNEL_MESSAGE)
    assert payload == {
        "type": "message",
        "realm_url": REALM_URL,
        "realm_name": "Zulip Dev",
        "user_id": 10,
        "sender_id": 6,
        "sender_full_name": "aaron",
        "sender_avatar_url": REALM_URL + "/user_avatars/2/abc.png?version=3",
        "message_id": 45,
        "time": 1754385395,
        "content": "Hi @Hamlet 🙂",
        "recipient_type": "channel",
        "channel_id": 10,
        "channel_name": "Denmark",
        "topic": "test",
    }
    parsed = parse_payload(payload, realm_url=REALM_URL, user_id=10)
    assert (parsed.model, parsed.recipient) == ("NotifPayloadNewMessage", "NotifPayloadChannelRecipient")


def test_direct_and_group_direct_payloads() -> None:
    payload = message_payload(IDENTITY, DIRECT)
    assert payload["recipient_type"] == "direct" and payload["recipient_user_ids"] == [6, 10]
    assert "channel_id" not in payload and "pm_users" not in payload
    assert payload["sender_avatar_url"] == DIRECT["avatar_url"]  # absolute already
    assert parse_payload(payload, realm_url=REALM_URL, user_id=10).recipient == "NotifPayloadDmRecipient"
    group = {**DIRECT, "display_recipient": [{"id": 15}, {"id": 12}, {"id": 10}, {"id": 6}]}
    assert message_payload(IDENTITY, group)["recipient_user_ids"] == [6, 10, 12, 15]
    # Sender and recipient are in the list even when display_recipient names only the other.
    assert message_payload(IDENTITY, {**DIRECT, "display_recipient": [{"id": 6}]})["recipient_user_ids"] == [
        6,
        10,
    ]


def test_group_mention_payload_names_the_group() -> None:
    payload = message_payload(IDENTITY, CHANNEL_MESSAGE, group=(41, "test_user_group"))
    assert (payload["mentioned_user_group_id"], payload["mentioned_user_group_name"]) == (
        41,
        "test_user_group",
    )
    parse_payload(payload, realm_url=REALM_URL, user_id=10)


def test_remove_and_test_payloads() -> None:
    payload = remove_payload(IDENTITY, [32, 31, 32])
    assert payload == {
        "type": "remove",
        "realm_url": REALM_URL,
        "realm_name": "Zulip Dev",
        "user_id": 10,
        "message_ids": [31, 32],
    }
    assert parse_payload(payload, realm_url=REALM_URL, user_id=10).model == "NotifPayloadRemove"
    # At most the 200 newest, as Zulip's service truncates.
    assert remove_payload(IDENTITY, range(1, 302))["message_ids"] == list(range(102, 302))
    test = ping_payload(IDENTITY, 1754577820)
    assert test == {
        "type": "test",
        "realm_url": REALM_URL,
        "realm_name": "Zulip Dev",
        "user_id": 10,
        "time": 1754577820,
    }
    # The app knows no "test" type: it decrypts and drops it (the service delivered it).
    with pytest.raises(Unparsable, match="UnexpectedNotifPayload"):
        parse_payload(test, realm_url=REALM_URL, user_id=10)


def test_the_old_payload_would_not_parse() -> None:
    """A payload of keys the app does not know (`type` the message type) falls through."""
    old = {"event": "message", "realm_id": 2, "message_id": 1, "type": "stream", "content": "x"}
    with pytest.raises(Unparsable):
        parse_payload(old, realm_url=REALM_URL, user_id=10)


def test_a_wrong_identity_is_dropped_by_the_app() -> None:
    payload = message_payload(Identity("http://other.palaver.test", "x", 10), DIRECT)
    with pytest.raises(Unparsable, match="fails to match"):
        parse_payload(payload, realm_url=REALM_URL, user_id=10)


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>plain</p>", "plain"),
        (
            '<p><span class="emoji emoji-1f468-200d-1f4bb" title="technologist">:technologist:</span></p>',
            "👨‍💻",
        ),
        ('<p><img alt=":octopus:" class="emoji" src="/user_avatars/2/emoji/images/1.png"></p>', ":octopus:"),
        ("<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>reply</p>", "> quoted\nreply"),
        ("<ul>\n<li>one</li>\n<li>two</li>\n</ul>", "- one\n- two"),
        ('<ol start="3">\n<li>c</li>\n<li>d</li>\n</ol>', "3. c\n4. d"),
        (
            '<div class="spoiler-block"><div class="spoiler-header"><p>Header</p></div>'
            '<div class="spoiler-content" aria-hidden="true"><p>secret</p></div></div>',
            "Header\n(…)",
        ),
        (
            '<p><span class="katex"><span class="katex-mathml"><math><semantics><mrow><mi>x</mi></mrow>'
            '<annotation encoding="application/x-tex">x^2</annotation></semantics></math></span>'
            '<span class="katex-html" aria-hidden="true"><span>x2</span></span></span></p>',
            "x$$x^2$$",
        ),
        ("<p>a &amp; b &lt;c&gt;</p>", "a & b <c>"),
    ],
)
def test_push_content(html: str, text: str) -> None:
    assert push_content(html) == text


def test_push_content_is_truncated() -> None:
    long = "<p>" + "x" * 500 + "</p>"
    assert push_content(long) == "x" * PUSH_CONTENT_LIMIT + "…"
    assert push_content("<p>" + "y" * PUSH_CONTENT_LIMIT + "</p>") == "y" * PUSH_CONTENT_LIMIT


# Encryption and the envelopes -------------------------------------------------------------


def test_fcm_and_apns_envelopes_decrypt_as_the_app_does() -> None:
    key = new_key()
    payload = message_payload(IDENTITY, DIRECT)
    ciphertext = encrypt_payload(key, payload)
    fcm = fcm_data(2**32 - 1, ciphertext)
    assert fcm["push_key_id"] == "4294967295" and all(isinstance(v, str) for v in fcm.values())
    assert parse_fcm(fcm, {2**32 - 1: key}, realm_url=REALM_URL, user_id=10).payload == payload
    apns = apns_payload(7, ciphertext, alert=True)
    assert apns["push_key_id"] == 7
    assert apns["aps"] == {"mutable-content": 1, "alert": {"title": "New notification"}}
    assert parse_apns(apns, {7: key}, realm_url=REALM_URL, user_id=10).payload == payload
    assert apns_payload(7, ciphertext, alert=False)["aps"] == {"content-available": 1}
    # The nonce is the first 24 bytes: each encryption differs.
    assert encrypt_payload(key, payload)[:24] != ciphertext[:24]
    with pytest.raises(Unparsable):
        parse_fcm(
            {"push_key_id": 7, "encrypted_data": fcm["encrypted_data"]},
            {7: key},
            realm_url=REALM_URL,
            user_id=10,
        )


def test_encrypt_payload_rejects_unknown_cryptosystems() -> None:
    with pytest.raises(ValueError, match="unsupported push key type 0x32"):
        encrypt_payload(b"\x32" + bytes(32), {})


def test_relay_request_carries_only_ciphertext_and_the_registration() -> None:
    key = new_key()
    target = PushTarget(3, key, 11, "fcm", "YWFhYWFhYWE=", "cHVi", "c2VhbGVk")
    payload = message_payload(IDENTITY, DIRECT)
    body = relay_request(target, payload)
    assert set(body) == {
        "push_key_id",
        "token_kind",
        "token_id",
        "bouncer_public_key",
        "encrypted_push_registration",
        "encrypted_data",
        "priority",
        "fcm_data",
    }
    assert body["priority"] == "high"
    assert decrypt(key, body) == payload
    assert parse_fcm(body["fcm_data"], {11: key}, realm_url=REALM_URL, user_id=10).payload == payload
    assert "aaron" not in orjson.dumps(body).decode()
    apns = relay_request(dataclasses.replace(target, token_kind="apns"), remove_payload(IDENTITY, [1]))
    assert apns["priority"] == "normal" and apns["apns_payload"]["aps"] == {"content-available": 1}
    assert "fcm_data" not in apns


def test_description_names_the_app_commit() -> None:
    source = DESCRIPTION["source"]
    assert source["repository"] == "zulip/zulip-flutter" and len(source["commit"]) == 40


# Who gets a notification: settings x message kinds --------------------------------------

BASE = RecipientFacts(
    user_id=10,
    sender_id=6,
    is_direct=False,
    flags=frozenset(),
    enable_offline_push_notifications=True,
    enable_online_push_notifications=False,
)


def facts(**changes: Any) -> RecipientFacts:
    return dataclasses.replace(BASE, **changes)


KINDS: dict[str, dict[str, Any]] = {
    "direct": {"is_direct": True},
    "mention": {"flags": frozenset({"mentioned"})},
    "alert word": {"flags": frozenset({"has_alert_word"})},
    "topic wildcard": {"flags": frozenset({"topic_wildcard_mentioned"}), "wildcard_mentions_notify": True},
    "channel wildcard": {"flags": frozenset({"stream_wildcard_mentioned"}), "wildcard_mentions_notify": True},
    "followed topic": {"topic_policy": VisibilityPolicy.FOLLOWED, "followed_topic_push": True},
    "channel push on": {"channel_push": True},
    "plain channel": {},
}
EXPECTED = {
    "direct": DIRECT_MESSAGE,
    "mention": MENTION,
    "alert word": MENTION,
    "topic wildcard": TOPIC_WILDCARD_MENTION,
    "channel wildcard": STREAM_WILDCARD_MENTION,
    "followed topic": FOLLOWED_TOPIC,
    "channel push on": CHANNEL,
    "plain channel": None,
}
# Each setting (or state) and what it leaves of each kind's notification.
SETTINGS: dict[str, tuple[dict[str, Any], set[str]]] = {
    "defaults, away": ({}, set(EXPECTED) - {"plain channel"}),
    "offline push off": (
        {"enable_offline_push_notifications": False},
        {"followed topic", "channel push on"},
    ),
    "active in a browser": ({"idle": False}, set()),
    "active, online push on": (
        {"idle": False, "enable_online_push_notifications": True},
        set(EXPECTED) - {"plain channel"},
    ),
    "sender muted": ({"sender_muted": True}, set()),
    "own message": ({"sender_id": 10}, set()),
    "already read": ({"flags_add": "read"}, set()),
    "channel muted": (
        {"channel_muted": True},
        {"direct", "mention", "alert word", "followed topic"},
    ),
    "topic muted": (
        {"topic_policy_if_unset": VisibilityPolicy.MUTED},
        {"direct", "mention", "alert word", "followed topic"},
    ),
    "topic unmuted in a muted channel": (
        {"channel_muted": True, "topic_policy_if_unset": VisibilityPolicy.UNMUTED},
        set(EXPECTED) - {"plain channel"},
    ),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_who_gets_notified(setting: str, kind: str) -> None:
    changes, notified = SETTINGS[setting]
    merged = {**KINDS[kind], **{k: v for k, v in changes.items() if not k.endswith(("_add", "_if_unset"))}}
    if "flags_add" in changes:
        merged["flags"] = merged.get("flags", frozenset()) | {changes["flags_add"]}
    if "topic_policy_if_unset" in changes and "topic_policy" not in merged:
        merged["topic_policy"] = changes["topic_policy_if_unset"]
    expected = EXPECTED[kind] if kind in notified else None
    assert push_trigger(facts(**merged)) == expected


def test_wildcard_mentions_follow_their_setting() -> None:
    wildcard = frozenset({"stream_wildcard_mentioned"})
    assert push_trigger(facts(flags=wildcard, wildcard_mentions_notify=False)) is None
    assert push_trigger(facts(flags=wildcard, wildcard_mentions_notify=False, channel_push=True)) == CHANNEL
    # In a followed topic, the followed-topic wildcard setting decides, even if muted elsewhere.
    followed = {"topic_policy": VisibilityPolicy.FOLLOWED, "followed_topic_push": True, "channel_muted": True}
    assert (
        push_trigger(facts(flags=wildcard, followed_topic_wildcard_mentions_notify=True, **followed))
        == STREAM_WILDCARD_MENTION_IN_FOLLOWED_TOPIC
    )
    assert push_trigger(facts(flags=wildcard, **followed)) == FOLLOWED_TOPIC
    assert push_trigger(facts(topic_policy=VisibilityPolicy.FOLLOWED)) is None  # followed-topic push off
