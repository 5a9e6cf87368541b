"""An import's messages, written in batches: each message's row (rendered as its sender,
its links renamed to the new IDs), every receiver's flags, reactions and attachments,
with no events (an import has no clients listening)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

import orjson
from sqlalchemy import insert, select, update

from palaver.actions.message_recipients import create_dm_group
from palaver.importers.model import ImportedMessage
from palaver.importers.narrow_links import remap_links
from palaver.importers.write_context import WriteContext, table_of
from palaver.lib.limits import MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH
from palaver.lib.linkifiers import linkifiers_for_realm
from palaver.lib.markdown.contract import MarkdownContext, RenderResult, StreamRef, UserRef
from palaver.lib.markdown.render import render_message
from palaver.models.attachments import AttachmentMessage
from palaver.models.channels import Stream
from palaver.models.messages import Message, MessageFlag, Reaction
from palaver.portability.archive import Progress

_READ, _STARRED, _MENTIONED = int(MessageFlag.READ), int(MessageFlag.STARRED), int(MessageFlag.MENTIONED)
_STREAM_WILDCARD = int(MessageFlag.STREAM_WILDCARD_MENTIONED)
_TOPIC_WILDCARD = int(MessageFlag.TOPIC_WILDCARD_MENTIONED)
_IS_PRIVATE = int(MessageFlag.IS_PRIVATE)


def _shortened(content: str) -> str:
    """``content`` cut to a message's greatest length, marked as cut."""
    return content if len(content) <= MAX_MESSAGE_LENGTH else content[: MAX_MESSAGE_LENGTH - 3] + "..."


@dataclass
class _Prepared:
    message: ImportedMessage
    row: dict[str, Any]
    flags: dict[int, int]  # user ID -> flags
    attachment_ids: list[int]
    # The content before its links were renamed, when one names a message not written yet
    # (often one of the same batch): renamed again once the batch has its IDs.
    relink: str | None = None


def add_messages(ctx: WriteContext, progress: TextIO | None) -> None:
    ctx.session.flush()
    users_by_id = {uid: UserRef(uid, name) for uid, name in ctx.names.items()}
    users_by_name: dict[str, UserRef] = {}
    for uid in sorted(ctx.names):
        users_by_name.setdefault(ctx.names[uid].lower(), users_by_id[uid])
    channels = ctx.session.execute(select(Stream.name, Stream.id).where(Stream.realm_id == ctx.realm.id))
    streams_by_name = {name.lower(): StreamRef(sid, name) for name, sid in channels}
    ctx.context = MarkdownContext(
        realm_url=ctx.realm_url,
        sender_id=0,
        sender_full_name="",
        users_by_name=users_by_name,
        users_by_id=users_by_id,
        groups_by_name={},
        streams_by_name=streams_by_name,
        linkifiers=linkifiers_for_realm(ctx.session, ctx.realm.id),
    )
    bar = Progress("messages", ctx.source.message_estimate, progress)
    batch: list[ImportedMessage] = []
    for message in ctx.source.messages():
        batch.append(message)
        if len(batch) >= ctx.batch_size:
            _write_batch(ctx, batch)
            bar.advance(len(batch), "messages")
            batch = []
    if batch:
        _write_batch(ctx, batch)
        bar.advance(len(batch), "messages")
    bar.finish()


def _recipient(ctx: WriteContext, message: ImportedMessage) -> tuple[int, list[int], bool] | None:
    """(recipient ID, who receives it, is a channel message), or None to skip it."""
    if message.channel is not None:
        found = ctx.channels.get(message.channel)
        if found is None:
            ctx.report.skip("message in an unknown channel", message.location)
            return None
        return found[0], found[1], True
    members = message.direct_members or frozenset()
    ids = {ctx.user_ids[k] for k in members if k in ctx.user_ids}
    if len(ids) < len(members):
        ctx.report.skip("direct message to a user not among the users", message.location)
        return None
    ids.add(ctx.user_ids[message.sender])
    key = ",".join(map(str, sorted(ids)))
    known = ctx.dm_recipients.get(key)
    if known is not None:
        recipient_id = known[0]
    else:
        # Its members are this import's own users: no other transaction can make it.
        group = create_dm_group(ctx.session, set(ids))
        assert group.recipient_id is not None
        recipient_id = group.recipient_id
        ctx.dm_recipients.set(key, (recipient_id, ""))
    return recipient_id, sorted(ids), False


def _prepare(ctx: WriteContext, message: ImportedMessage) -> _Prepared | None:
    """The message's row and what goes with it, or None (counted) to skip it."""
    if message.sender not in ctx.user_ids:
        ctx.report.skip("message from a user not among the users", message.location)
        return None
    target = _recipient(ctx, message)
    if target is None:
        return None
    recipient_id, receivers, is_channel = target
    sender_id = ctx.user_ids[message.sender]
    original, attachment_ids = ctx.content_with_files(message, sender_id)
    later: list[str] = []
    content = remap_links(original, ctx.new_ids, later)
    if not content.strip():
        ctx.report.skip("empty message", message.location)
        return None
    if len(content) > MAX_MESSAGE_LENGTH:
        ctx.report.skip("message too long (shortened)", message.location)
        content = _shortened(content)
    topic = message.topic.strip() if is_channel else ""
    if len(topic) > MAX_TOPIC_LENGTH:
        ctx.report.skip("topic too long (shortened)", message.location)
        topic = topic[: MAX_TOPIC_LENGTH - 3] + "..."
    rendered = render_message(content, ctx.sender_context(sender_id))
    row = {
        "realm_id": ctx.realm.id,
        "sender_id": sender_id,
        "recipient_id": recipient_id,
        "subject": topic,
        "content": content,
        "rendered_content": rendered.html,
        "rendered_content_version": 1,
        "date_sent": message.date_sent,
        "last_edit_time": message.last_edit_time,
        "edit_history": _edit_history(ctx, message, sender_id),
        "has_attachment": bool(attachment_ids) or rendered.has_attachment,
        "has_image": rendered.has_image,
        "has_link": rendered.has_link,
        "is_channel_message": is_channel,
        "sending_client": f"{ctx.source.source} import",
    }
    flags = _user_flags(ctx, message, receivers, is_channel, rendered)
    return _Prepared(message, row, flags, attachment_ids, relink=original if later else None)


def _relink(ctx: WriteContext, message_id: int, item: _Prepared) -> None:
    """Rename the links of a message written before the message they name had its ID."""
    assert item.relink is not None
    content = _shortened(remap_links(item.relink, ctx.new_ids))
    if content == item.row["content"]:
        return
    html = render_message(content, ctx.sender_context(item.row["sender_id"])).html
    table = table_of(Message)
    ctx.session.execute(
        update(table).where(table.c.id == message_id).values(content=content, rendered_content=html)
    )


def _user_flags(
    ctx: WriteContext,
    message: ImportedMessage,
    receivers: list[int],
    is_channel: bool,
    rendered: RenderResult,
) -> dict[int, int]:
    """Each receiver's flags: the source's own, or read history with mentions and stars."""
    if message.user_flags is not None:
        return {ctx.user_ids[k]: f for k, f in message.user_flags.items() if k in ctx.user_ids}
    sender_id = ctx.user_ids[message.sender]
    starred = {ctx.user_ids[k] for k in message.starred_by if k in ctx.user_ids}
    # Plain ints: IntFlag arithmetic per receiver was a tenth of an import's time.
    base = _READ | (0 if is_channel else _IS_PRIVATE)
    wildcard = 0
    if rendered.stream_wildcard:
        wildcard = _STREAM_WILDCARD
    elif rendered.topic_wildcard:
        wildcard = _TOPIC_WILDCARD
    mentioned = rendered.mentioned_user_ids
    flags: dict[int, int] = {}
    # A sender who left the channel still has their own message.
    for uid in (*receivers, sender_id):
        f = base
        if uid in mentioned:
            f |= _MENTIONED
        if uid != sender_id:
            f |= wildcard
        if uid in starred:
            f |= _STARRED
        flags[uid] = f
    return flags


def _write_batch(ctx: WriteContext, batch: list[ImportedMessage]) -> None:
    prepared = [p for p in (_prepare(ctx, m) for m in batch) if p is not None]
    if not prepared:
        return
    ids = list(
        ctx.session.scalars(
            insert(table_of(Message)).returning(table_of(Message).c.id, sort_by_parameter_order=True),
            [p.row for p in prepared],
        )
    )
    user_messages: list[tuple[int, int, int]] = []
    reactions: list[dict[str, Any]] = []
    links: list[dict[str, int]] = []
    named: list[tuple[str, int]] = []
    for message_id, item in zip(ids, prepared, strict=True):
        if item.row["is_channel_message"]:  # a channel's first message; conversations have none
            ctx.first_message.setdefault(item.row["recipient_id"], message_id)
        if item.message.source_id is not None:
            named.append((item.message.source_id, message_id))
        user_messages += [(uid, message_id, f) for uid, f in item.flags.items()]
        reactions += _reactions(ctx, item.message, message_id)
        links += [{"attachment_id": a, "message_id": message_id} for a in item.attachment_ids]
        ctx.summary.messages += 1
        ctx.summary.direct_messages += not item.row["is_channel_message"]
    ctx.message_ids.set_many(named)
    for message_id, item in zip(ids, prepared, strict=True):
        if item.relink is not None:
            _relink(ctx, message_id, item)
    if user_messages:
        _insert_user_messages(ctx, user_messages)
    if reactions:
        ctx.session.execute(insert(table_of(Reaction)), reactions)
        ctx.summary.reactions += len(reactions)
    if links:
        ctx.session.execute(insert(table_of(AttachmentMessage)), links)


def _insert_user_messages(ctx: WriteContext, rows: list[tuple[int, int, int]]) -> None:
    """The largest table, straight through the driver (COPY on PostgreSQL) as ``seed.py``
    writes it: SQLAlchemy's per-row work cost more than the database's. It is the
    session's connection, so the rows are part of the import's transaction."""
    raw: Any = ctx.session.connection().connection.driver_connection
    columns = "user_message (user_profile_id, message_id, flags)"
    cursor = raw.cursor()
    try:
        if ctx.session.get_bind().dialect.name == "postgresql":
            with cursor.copy(f"COPY {columns} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO {columns} VALUES (?, ?, ?)", rows)
    finally:
        cursor.close()


def _reactions(ctx: WriteContext, message: ImportedMessage, message_id: int) -> list[dict[str, Any]]:
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for reaction in message.reactions:
        uid = ctx.user_ids.get(reaction.user)
        if uid is None:
            ctx.report.skip("reaction by a user not among the users", message.location)
            continue
        emoji = ctx.emoji(reaction.emoji_name)
        if emoji is None:
            ctx.report.skip(f"reaction with an unknown emoji :{reaction.emoji_name}:", message.location)
            continue
        reaction_type, code, name = emoji
        rows.setdefault(
            (uid, code),
            {
                "user_profile_id": uid,
                "message_id": message_id,
                "emoji_name": name,
                "emoji_code": code,
                "reaction_type": reaction_type,
            },
        )
    return list(rows.values())


def _edit_history(ctx: WriteContext, message: ImportedMessage, sender_id: int) -> str | None:
    """The source's edit history by the new IDs. An earlier text is rendered again here, as
    the message itself is (the source's HTML names its own users and channels): the
    history view shows and diffs that HTML."""
    if not message.edits:
        return None
    entries = []
    for edit in message.edits:
        entry = {k: v for k, v in edit.items() if k != "prev_rendered_content"}
        if isinstance(entry.get("prev_content"), str):
            context = ctx.sender_context(sender_id)
            entry["prev_rendered_content"] = render_message(entry["prev_content"], context).html
        if "user_id" in entry:
            entry["user_id"] = ctx.user_ids.get(str(entry["user_id"]))
        for key in ("stream", "prev_stream"):
            if key in entry:
                stream_id = ctx.stream_ids.get(str(entry[key]))
                if stream_id is None:
                    entry.pop(key)
                else:
                    entry[key] = stream_id
        entries.append(entry)
    return orjson.dumps(entries).decode()
