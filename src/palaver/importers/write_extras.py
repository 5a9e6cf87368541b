"""The rest of an organization an import carries, each piece checked as the API checks it
(a refusal is counted): custom profile fields, linkifiers, each person's topic settings,
muted users and alert words, channel folders, scheduled messages and reminders, default
channels, email domains, code playgrounds, statuses, saved snippets and navigation views."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from sqlalchemy import insert

from palaver.actions.linkifiers import do_add_linkifier
from palaver.actions.navigation_views import do_add_navigation_view
from palaver.actions.playgrounds import do_add_playground
from palaver.actions.profile_fields import do_create_profile_field
from palaver.actions.realm_domains import do_add_realm_domain
from palaver.actions.saved_snippets import do_create_saved_snippet
from palaver.actions.user_status import do_update_user_status
from palaver.actions.users import ProfileDataChange, do_update_user_custom_profile_data
from palaver.importers.model import ImportedScheduledMessage
from palaver.importers.narrow_links import remap_fragment
from palaver.importers.write_context import WriteContext, table_of
from palaver.lib.channel_folders import (
    channel_folder_name_in_use,
    check_channel_folder_description,
    check_channel_folder_name,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.limits import MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH
from palaver.lib.markdown.render import render_markdown, render_message
from palaver.lib.scheduled_messages import direct_to, reminder_content
from palaver.models import UserProfile
from palaver.models.alert_words import MAX_ALERT_WORD_LENGTH, AlertWord
from palaver.models.channels import ChannelFolder, DefaultStream
from palaver.models.messages import Message
from palaver.models.muted_users import MutedUser
from palaver.models.requester import Requester
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage
from palaver.models.user_topics import UserTopic, VisibilityPolicy
from palaver.timeutil import utcnow

_VISIBILITY_POLICIES = frozenset(int(p) for p in VisibilityPolicy if p != VisibilityPolicy.INHERIT)


def add_profile_fields(ctx: WriteContext) -> None:
    for spec in ctx.source.profile_fields:
        field = ctx.attempt(
            "custom profile field",
            spec.name,
            functools.partial(
                do_create_profile_field,
                ctx.session,
                ctx.owner,
                name=spec.name,
                hint=spec.hint,
                field_type=spec.field_type,
                field_data=spec.field_data,
                display_in_profile_summary=False,
                required=False,
                editable_by_user=True,
            ),
        )
        if field is None:
            continue
        ctx.summary.profile_fields += 1
        for key, value in spec.values.items():
            user = ctx.session.get(UserProfile, ctx.user_ids.get(key, 0))
            if user is None:
                continue
            stored = (
                [ctx.user_ids[k] for k in value if k in ctx.user_ids] if isinstance(value, list) else value
            )
            change = ProfileDataChange(field.id, stored)
            ctx.attempt(
                "profile field value",
                f"{spec.name}: {key}",
                functools.partial(do_update_user_custom_profile_data, ctx.session, user, [change]),
            )


def add_linkifiers(ctx: WriteContext) -> None:
    for pattern, url_template in ctx.source.linkifiers:
        if ctx.attempt(
            "linkifier",
            pattern,
            functools.partial(do_add_linkifier, ctx.session, ctx.owner, pattern, url_template),
        ):
            ctx.summary.linkifiers += 1


def add_personal_settings(ctx: WriteContext) -> None:
    """Muted/followed topics, muted users and alert words: each person's own, so only
    their keys are checked (a row naming someone or a channel not imported is skipped)."""
    topics: dict[tuple[int, int, str], dict[str, Any]] = {}
    for spec in ctx.source.user_topics:
        user_id, stream_id = ctx.user_ids.get(spec.user), ctx.stream_ids.get(spec.channel)
        topic = spec.topic.strip()
        if user_id is None or stream_id is None:
            ctx.report.skip("topic setting of a user or channel not imported", f"{spec.user} {spec.channel}")
            continue
        if spec.visibility_policy not in _VISIBILITY_POLICIES or len(topic) > MAX_TOPIC_LENGTH:
            ctx.report.skip(
                "topic setting with an unknown policy or too long a topic", f"{spec.user} {topic!r}"
            )
            continue
        # One row per user and topic regardless of case, as the table's unique index says.
        topics[(user_id, stream_id, topic.lower())] = {
            "user_profile_id": user_id,
            "stream_id": stream_id,
            "topic_name": topic,
            "visibility_policy": spec.visibility_policy,
            "last_updated": spec.last_updated or utcnow(),
        }
    muted: dict[tuple[int, int], dict[str, Any]] = {}
    for mute in ctx.source.muted_users:
        user_id, muted_id = ctx.user_ids.get(mute.user), ctx.user_ids.get(mute.muted)
        if user_id is None or muted_id is None or user_id == muted_id:
            ctx.report.skip("muted user not imported (or oneself)", f"{mute.user} {mute.muted}")
            continue
        muted[(user_id, muted_id)] = {
            "user_profile_id": user_id,
            "muted_user_id": muted_id,
            "date_muted": mute.date_muted or utcnow(),
        }
    words: dict[tuple[int, str], dict[str, Any]] = {}
    for alert in ctx.source.alert_words:
        user_id, word = ctx.user_ids.get(alert.user), alert.word.strip()
        if user_id is None or not word or len(word) > MAX_ALERT_WORD_LENGTH:
            ctx.report.skip("alert word of a user not imported, empty or too long", f"{alert.user} {word!r}")
            continue
        words[(user_id, word)] = {"realm_id": ctx.realm.id, "user_profile_id": user_id, "word": word}
    for model, rows in ((UserTopic, topics), (MutedUser, muted), (AlertWord, words)):
        if rows:
            ctx.session.execute(insert(table_of(model)), list(rows.values()))
    ctx.summary.user_topics, ctx.summary.muted_users = len(topics), len(muted)
    ctx.summary.alert_words = len(words)


def add_channel_folders(ctx: WriteContext) -> dict[str, int]:
    """The organization's channel folders, in their order, archived ones included; the
    names are checked as the API checks them (a refusal is counted)."""
    ids: dict[str, int] = {}
    specs = sorted(ctx.source.channel_folders, key=lambda f: (f.order, f.key))
    for order, spec in enumerate(specs):
        try:
            name = check_channel_folder_name(spec.name)
            description = check_channel_folder_description(spec.description)
        except JsonableError as error:
            ctx.report.skip(f"channel folder refused ({error.msg})", spec.key)
            continue
        if channel_folder_name_in_use(ctx.session, ctx.realm.id, name):
            ctx.report.skip("channel folder whose name is already in use", spec.key)
            continue
        folder = ChannelFolder(
            realm_id=ctx.realm.id,
            name=name,
            description=description,
            rendered_description=render_markdown(description),
            creator_id=ctx.owner.id,
            is_archived=spec.is_archived,
            order=order,
        )
        ctx.session.add(folder)
        ctx.session.flush()
        ids[spec.key] = folder.id
    ctx.summary.channel_folders = len(ids)
    return ids


def add_scheduled_messages(ctx: WriteContext) -> None:
    """Messages scheduled on the old server and not sent yet: pending here as they were
    there, for the scheduler to send when due (an overdue one at its next run). The
    address is checked like a message's; the sender's permissions again at delivery."""
    rows = []
    for spec in ctx.source.scheduled_messages:
        message = spec.message
        sender_id = ctx.user_ids.get(message.sender)
        if sender_id is None or message.sender not in ctx.active_keys:
            ctx.report.skip("scheduled message of a user not imported or deactivated", message.location)
            continue
        stream_id, to = None, "[]"
        if message.channel is not None:
            stream_id = ctx.stream_ids.get(message.channel)
            if stream_id is None:
                ctx.report.skip("scheduled message to a channel not imported", message.location)
                continue
        else:
            members = message.direct_members or frozenset()
            ids = {ctx.user_ids[k] for k in members if k in ctx.user_ids}
            if len(ids) < len(members):
                ctx.report.skip("scheduled message to a user not among the users", message.location)
                continue
            to = orjson.dumps(direct_to(sender_id, sorted(ids | {sender_id}))).decode()
        if spec.reminder_target is not None:
            reminder = _reminder(ctx, spec, sender_id)
            if reminder is not None:
                rows.append(reminder)
            continue
        content, _attachments = ctx.content_with_files(message, sender_id)
        topic = message.topic.strip() if stream_id is not None else ""
        if not content.strip() or len(content) > MAX_MESSAGE_LENGTH or len(topic) > MAX_TOPIC_LENGTH:
            ctx.report.skip("scheduled message empty or too long", message.location)
            continue
        rows.append(
            _scheduled_row(
                ctx,
                spec,
                sender_id,
                delivery_type=DeliveryType.SEND_LATER,
                stream_id=stream_id,
                to=to,
                topic=topic,
                content=content,
            )
        )
    if rows:
        ctx.session.execute(insert(table_of(ScheduledMessage)), rows)
    ctx.summary.scheduled_messages = sum(r["delivery_type"] == DeliveryType.SEND_LATER for r in rows)
    ctx.summary.reminders = len(rows) - ctx.summary.scheduled_messages


def _reminder(ctx: WriteContext, spec: ImportedScheduledMessage, sender_id: int) -> dict[str, Any] | None:
    """A pending reminder: the Notification Bot's text is made again for the message's
    new ID (its links name the message), as a direct message to onectx."""
    assert spec.reminder_target is not None
    target = ctx.session.get(Message, ctx.new_message_id(spec.reminder_target) or -1)
    if target is None:
        ctx.report.skip("reminder about a message not imported", spec.message.location)
        return None
    content = reminder_content(ctx.session, target, spec.reminder_note, ctx.realm_url)
    if len(content) > MAX_MESSAGE_LENGTH:
        ctx.report.skip("reminder too long", spec.message.location)
        return None
    return _scheduled_row(
        ctx,
        spec,
        sender_id,
        delivery_type=DeliveryType.REMIND,
        stream_id=None,
        to=orjson.dumps([sender_id]).decode(),
        topic="",
        content=content,
        reminder_target_message_id=target.id,
    )


def _scheduled_row(
    ctx: WriteContext,
    spec: ImportedScheduledMessage,
    sender_id: int,
    *,
    delivery_type: DeliveryType,
    stream_id: int | None,
    to: str,
    topic: str,
    content: str,
    reminder_target_message_id: int | None = None,
) -> dict[str, Any]:
    """One scheduled_message row, rendered as its sender; every row names the same
    columns, so that the rows go in as one executemany."""
    context = ctx.sender_context(sender_id)
    return {
        "realm_id": ctx.realm.id,
        "sender_id": sender_id,
        "delivery_type": int(delivery_type),
        "type": "stream" if stream_id is not None else "private",
        "stream_id": stream_id,
        "to": to,
        "topic": topic,
        "content": content,
        "rendered_content": render_message(content, context).html,
        "scheduled_timestamp": spec.deliver_at,
        "read_by_sender": spec.read_by_sender,
        "sending_client": f"{ctx.source.source} import",
        "failed": spec.failed,
        "failure_message": spec.failure_message,
        "reminder_target_message_id": reminder_target_message_id,
        "reminder_note": spec.reminder_note if reminder_target_message_id is not None else None,
    }


def add_organization_extras(ctx: WriteContext) -> None:
    """Default channels, email domains, code playgrounds, and each person's status and
    saved snippets: through the actions, each checked as there (a refusal is counted)."""
    defaults = sorted({ctx.stream_ids[k] for k in ctx.source.default_channels if k in ctx.stream_ids})
    if defaults:
        ctx.session.execute(
            insert(table_of(DefaultStream)), [{"realm_id": ctx.realm.id, "stream_id": s} for s in defaults]
        )
    ctx.summary.default_channels = len(defaults)
    for domain, allow_subdomains in ctx.source.realm_domains:
        if ctx.attempt(
            "email domain",
            domain,
            functools.partial(
                do_add_realm_domain,
                ctx.session,
                Requester.of(ctx.owner),
                domain,
                allow_subdomains=allow_subdomains,
            ),
        ):
            ctx.summary.realm_domains += 1
    for name, language, url_template in ctx.source.playgrounds:
        if ctx.attempt(
            "code playground",
            name,
            functools.partial(
                do_add_playground,
                ctx.session,
                Requester.of(ctx.owner),
                name=name,
                pygments_language=language,
                url_template=url_template,
            ),
        ):
            ctx.summary.playgrounds += 1
    for status in ctx.source.user_statuses:
        user = ctx.active_user(status.user)
        emoji = ctx.emoji(status.emoji_name) if status.emoji_name else ("", "", "")
        if user is None or emoji is None:
            ctx.report.skip("status of a user not imported, or with an unknown emoji", status.user)
            continue
        kind, code, name = emoji

        def set_status(user: UserProfile, text: str, emoji: tuple[str, str, str]) -> bool:
            do_update_user_status(ctx.session, Requester.of(user), status_text=text, emoji=emoji)
            return True

        if ctx.attempt(
            "status",
            status.user,
            functools.partial(set_status, user, status.status_text, (name, code, kind)),
        ):
            ctx.summary.user_statuses += 1
    for snippet in ctx.source.saved_snippets:
        user = ctx.active_user(snippet.user)
        if user is None:
            ctx.report.skip("saved snippet of a user not imported", snippet.user)
            continue
        if ctx.attempt(
            "saved snippet",
            f"{snippet.user} {snippet.title!r}",
            functools.partial(
                do_create_saved_snippet, ctx.session, Requester.of(user), snippet.title, snippet.content
            ),
        ):
            ctx.summary.saved_snippets += 1


def add_navigation_views(ctx: WriteContext) -> None:
    """Each person's pinned or hidden built-in views and named views, checked as the API
    checks them (a refusal is counted); a deactivated person's keep for their return."""
    for view in ctx.source.navigation_views:
        user = ctx.session.get(UserProfile, ctx.user_ids.get(view.user, 0))
        location = f"{view.user} {view.fragment!r}"
        if user is None:
            ctx.report.skip("navigation view of a user not imported", location)
            continue
        fragment = remap_fragment(view.fragment, ctx.new_ids)
        if fragment is None:
            ctx.report.skip("navigation view of a channel, person or message not imported", location)
            continue
        if ctx.attempt(
            "navigation view",
            location,
            functools.partial(
                do_add_navigation_view,
                ctx.session,
                Requester.of(user),
                fragment,
                is_pinned=view.is_pinned,
                name=view.name,
            ),
        ):
            ctx.summary.navigation_views += 1
