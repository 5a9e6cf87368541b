"""``--dry-run``: the summary an import would print, from reading the whole export and
writing nothing."""

from __future__ import annotations

import time

import orjson

from palaver.importers.model import (
    ImportInputError,
    ImportSource,
    Summary,
)
from palaver.importers.threads import ScratchMap


def dry_run(source: ImportSource) -> Summary:
    """The summary an import would print, reading everything and writing nothing.

    Files and emoji are counted, not downloaded.
    """
    started = time.monotonic()
    users = {u.key for u in source.users}
    summary = Summary(
        users=len(source.users),
        bots=sum(u.is_bot for u in source.users),
        deactivated=sum(not u.is_active for u in source.users),
        channels=len(source.channels),
        private_channels=sum(c.invite_only for c in source.channels),
        archived_channels=sum(c.archived for c in source.channels),
        emoji=len(source.emoji),
        groups=len(source.groups),
        group_settings=len(source.realm_group_settings)
        + sum(len(c.group_settings) for c in source.channels)
        + sum(len(g.group_settings) for g in source.groups),
        profile_fields=len(source.profile_fields),
        linkifiers=len(source.linkifiers),
        avatars=sum(u.avatar is not None for u in source.users),
        scheduled_messages=sum(s.reminder_target is None for s in source.scheduled_messages),
        reminders=sum(s.reminder_target is not None for s in source.scheduled_messages),
        channel_folders=len(source.channel_folders),
        user_statuses=len(source.user_statuses),
        saved_snippets=len(source.saved_snippets),
        navigation_views=len(source.navigation_views),
        default_channels=len(source.default_channels),
        realm_domains=len(source.realm_domains),
        playgrounds=len(source.playgrounds),
    )
    if not any(not u.is_bot and u.is_active for u in source.users):
        raise ImportInputError("the export has no active human user to own the organization")
    with ScratchMap() as topics:  # by channel key and lowered topic: on disk, they are many
        _dry_run_messages(source, summary, users, {c.key for c in source.channels}, topics)
        summary.topics = len(topics)
    summary.seconds = time.monotonic() - started
    return summary


def _dry_run_messages(
    source: ImportSource, summary: Summary, users: set[str], channels: set[str], topics: ScratchMap
) -> None:
    report = source.report
    for message in source.messages():
        if message.sender not in users:
            report.skip("message from a user not among the users", message.location)
            continue
        if message.channel is not None and message.channel not in channels:
            report.skip("message in an unknown channel", message.location)
            continue
        if message.direct_members is not None and not message.direct_members <= users:
            report.skip("direct message to a user not among the users", message.location)
            continue
        summary.messages += 1
        summary.direct_messages += message.channel is None
        summary.reactions += len({(r.user, r.emoji_name) for r in message.reactions if r.user in users})
        summary.files += len(message.files)
        if message.channel is not None:
            topics.add(orjson.dumps([message.channel, message.topic.strip().lower()]).decode())
