"""Uploading and deleting files, and linking them to the messages that reference them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from palaver.actions.thumbnails import delete_thumbnails, record_image
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.attachments import (
    claimable_attachments,
    format_attachments,
    get_owned_attachment,
    message_attachment_ids,
    new_path_id,
    new_url_secret,
    path_ids_in_links,
    upload_space_used,
)
from palaver.lib.storage import FileStorage
from palaver.lib.user_content import detect_type
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def do_upload_file(
    session: Session,
    storage: FileStorage,
    owner: Requester,
    file_name: str,
    data: bytes,
) -> Attachment:
    path_id = new_path_id(owner.realm_id, file_name)
    # The type is the bytes' (lib/user_content.py), never the uploader's declared one: it
    # is what an object store serves the file as.
    content_type = detect_type(data, file_name)
    # The bytes are stored first: a row must never point at a file that is not there.
    storage.save(path_id, data, content_type)
    try:
        with transaction(session) as tx:
            attachment = Attachment(
                realm_id=owner.realm_id,
                owner_id=owner.user_id,
                path_id=path_id,
                file_name=path_id.rsplit("/", 1)[-1],
                content_type=content_type,
                size=len(data),
                create_time=utcnow(),
                url_secret=new_url_secret(),
            )
            session.add(attachment)
            session.flush()
            # Images are noted for the thumbnail worker (workers/thumbnails.py).
            record_image(session, attachment, data)
            _send_attachment_event(tx, session, attachment, "add")
    except BaseException:
        storage.delete(path_id)
        raise
    return attachment


def do_delete_attachment(session: Session, storage: FileStorage, user: Requester, attachment_id: int) -> None:
    with transaction(session) as tx:
        attachment = get_owned_attachment(session, user, attachment_id)
        path_id = attachment.path_id
        session.execute(delete(Attachment).where(Attachment.id == attachment.id))
        tx.send_event(
            user.realm_id,
            ev.AttachmentRemove(
                attachment=ev.AttachmentRef(id=attachment_id),
                upload_space_used=upload_space_used(session, user.realm_id),
            ),
            [user.user_id],
        )
    # After the commit: a rolled-back delete must leave the file in place.
    storage.delete(path_id)
    delete_thumbnails(storage, path_id)


def _send_attachment_event(tx: Tx, session: Session, attachment: Attachment, op: str) -> None:
    [payload] = format_attachments(session, [attachment])
    model = ev.AttachmentAdd if op == "add" else ev.AttachmentUpdate
    tx.send_event(
        attachment.realm_id,
        model(
            attachment=ev.AttachmentPayload(**payload),
            upload_space_used=upload_space_used(session, attachment.realm_id),
        ),
        [attachment.owner_id],
    )


def update_message_attachments(
    tx: Tx, session: Session, sender: Requester, message: Message, links: Iterable[str]
) -> list[dict[str, Any]]:
    """Make the message's attachment links match its (new) content; part of the caller's
    transaction. Returns the sender's files that no message links any more (detached).
    """
    wanted = {
        a.id: a for a in claimable_attachments(session, sender, path_ids_in_links(links, sender.realm_id))
    }
    current = message_attachment_ids(session, message.id)
    added = set(wanted) - current
    removed = current - set(wanted)
    if added:
        session.execute(
            insert(AttachmentMessage), [{"attachment_id": i, "message_id": message.id} for i in sorted(added)]
        )
    if removed:
        session.execute(
            delete(AttachmentMessage).where(
                AttachmentMessage.message_id == message.id, AttachmentMessage.attachment_id.in_(removed)
            )
        )
    message.has_attachment = bool(wanted)
    changed = [session.get(Attachment, i) for i in sorted(added | removed)]
    detached = []
    for attachment in changed:
        if attachment is None:
            continue
        _send_attachment_event(tx, session, attachment, "update")
        if attachment.id in removed and attachment.owner_id == sender.user_id:
            [formatted] = format_attachments(session, [attachment])
            if not formatted["message_ids"]:
                detached.append(formatted)
    return detached
