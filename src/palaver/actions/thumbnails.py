"""Recording uploaded images, making their thumbnails, and updating the messages showing them.

Also home of ``do_update_rendered_content``: the one way a background job (thumbnails, link
previews) changes how a message looks without it being an edit: the content stays, history
is untouched, and the message's holders get ``update_message`` with ``rendering_only``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from palaver.db.transaction import rowcount, transaction
from palaver.events import types as ev
from palaver.lib.message_flags import flag_names
from palaver.lib.storage import FileStorage
from palaver.lib.thumbnails import (
    DONE,
    FAILED,
    PENDING,
    THUMBNAIL_FORMATS,
    describe_upload,
    formats_for,
    has_placeholder,
    images_by_path_id,
    make_thumbnail,
    preview_path_ids,
    thumbnail_key,
    thumbnail_markup,
)
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.media import ImageAttachment
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.timeutil import to_timestamp, utcnow

logger = logging.getLogger(__name__)

# A worker that claimed an image and has not finished after this is presumed dead.
CLAIM_TIMEOUT = timedelta(minutes=5)


def record_image(session: Session, attachment: Attachment, data: bytes) -> ImageAttachment | None:
    """Note an upload that is an image (inside the upload's transaction); None for other files."""
    described = describe_upload(data, attachment.content_type)
    if described is None:
        return None
    width, height, frames, content_type = described
    image = ImageAttachment(
        attachment_id=attachment.id,
        realm_id=attachment.realm_id,
        path_id=attachment.path_id,
        original_width=width,
        original_height=height,
        frames=frames,
        content_type=content_type,
        status=PENDING,
        thumbnails="",
    )
    session.add(image)
    return image


def delete_thumbnails(storage: FileStorage, path_id: str) -> None:
    """Remove an upload's thumbnails (after the upload itself is gone); missing ones are fine."""
    for fmt in THUMBNAIL_FORMATS:
        storage.delete(thumbnail_key(path_id, fmt.name))


def pending_image_ids(session: Session, now: datetime, limit: int = 50) -> list[int]:
    stale = now - CLAIM_TIMEOUT
    return list(
        session.scalars(
            select(ImageAttachment.id)
            .where(
                ImageAttachment.status == PENDING,
                or_(ImageAttachment.claimed_at.is_(None), ImageAttachment.claimed_at < stale),
            )
            .order_by(ImageAttachment.id)
            .limit(limit)
        )
    )


def do_make_thumbnails(session: Session, storage: FileStorage, image_id: int, now: datetime) -> bool:
    """Make and store every format of one pending image; False if another worker has it."""
    with transaction(session):
        claimed = session.execute(
            update(ImageAttachment)
            .where(
                ImageAttachment.id == image_id,
                ImageAttachment.status == PENDING,
                or_(ImageAttachment.claimed_at.is_(None), ImageAttachment.claimed_at < now - CLAIM_TIMEOUT),
            )
            .values(claimed_at=now)
        )
    if rowcount(claimed) != 1:
        return False
    image = session.get(ImageAttachment, image_id)
    assert image is not None
    made: list[str] = []
    status = DONE
    data = storage.read(image.path_id)
    if data is None:
        # Deleted since it was uploaded (or stored where this process cannot see it): an
        # ordinary outcome, not a fault worth a traceback.
        logger.warning("thumbnails of %s: the original is gone", image.path_id)
        status = FAILED
    else:
        try:
            for fmt in formats_for(image):
                storage.save(
                    thumbnail_key(image.path_id, fmt.name),
                    make_thumbnail(data, fmt),
                    f"image/{fmt.extension}",
                )
                made.append(fmt.name)
        except Exception:
            # A file Pillow cannot thumbnail is shown as the original instead; never retried.
            logger.exception("thumbnails of %s failed", image.path_id)
            status = FAILED
    with transaction(session):
        image.status = status
        image.thumbnails = ",".join(made)
        image.claimed_at = None
        message_ids = session.scalars(
            select(AttachmentMessage.message_id).where(AttachmentMessage.attachment_id == image.attachment_id)
        ).all()
        for message_id in message_ids:
            do_refresh_thumbnail_markup(session, message_id)
    return True


def do_refresh_thumbnail_markup(session: Session, message_id: int) -> bool:
    """Show the thumbnails now made in a message still showing placeholders."""
    with transaction(session):
        message = session.get(Message, message_id)
        if message is None or not has_placeholder(message.rendered_content or ""):
            return False
        html = message.rendered_content or ""
        images = images_by_path_id(session, message.realm_id, preview_path_ids(html))
        return do_update_rendered_content(session, message, thumbnail_markup(html, images))


def do_update_rendered_content(session: Session, message: Message, rendered: str) -> bool:
    """Replace how a message looks (not what it says), telling everyone holding it."""
    if rendered == message.rendered_content:
        return False
    with transaction(session) as tx:
        message.rendered_content = rendered
        audience: dict[int, list[int]] = defaultdict(list)
        for user_id, flags in session.execute(
            select(UserMessage.user_profile_id, UserMessage.flags).where(UserMessage.message_id == message.id)
        ):
            audience[int(flags) & ~int(MessageFlag.IS_PRIVATE)].append(user_id)
        for bits, user_ids in sorted(audience.items()):
            event = ev.UpdateMessage(
                user_id=None,
                edit_timestamp=to_timestamp(utcnow()),
                message_id=message.id,
                message_ids=[message.id],
                flags=flag_names(bits),
                rendering_only=True,
                content=message.content,
                rendered_content=rendered,
            )
            tx.send_event(message.realm_id, event, user_ids)
    return True
