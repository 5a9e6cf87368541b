"""Uploaded files: names and paths, who may read them, the objects clients see, and links.

A file belongs to its uploader until a message links it (``/user_uploads/<path_id>``);
from then on anyone who may read one of those messages may read the file too. Temporary
URLs carry an expiring signature made with the file's own secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import time
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row, id_in_text
from palaver.lib.message_access import bulk_access_message_ids
from palaver.lib.storage import UPLOAD_URL_PREFIX
from palaver.models import UserProfile
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp

TEMPORARY_URL_PREFIX = "/user_uploads/temporary/"
# Zulip's lifetime for temporary URLs: long enough to start a download, no longer.
TEMPORARY_URL_SECONDS = 60


def invalid_attachment() -> JsonableError:
    return JsonableError("Invalid attachment")


def sanitize_file_name(name: str) -> str:
    """A file name safe in a path and a URL: letters, digits, dots, dashes, underscores."""
    name = unicodedata.normalize("NFKC", name.replace("\\", "/").rsplit("/", 1)[-1])
    name = re.sub(r"[^\w\s.-]", "", name).strip()
    name = re.sub(r"[-\s]+", "-", name)
    if name.strip(".") == "":
        return "uploaded-file"
    return name[:200]


def new_path_id(realm_id: int, file_name: str) -> str:
    return f"{realm_id}/{secrets.token_hex(1)}/{secrets.token_urlsafe(18)}/{sanitize_file_name(file_name)}"


def new_url_secret() -> str:
    return secrets.token_hex(32)


def upload_url(path_id: str) -> str:
    return UPLOAD_URL_PREFIX + quote(path_id)


def path_ids_in_links(links: Iterable[str], realm_id: int) -> set[str]:
    """The uploads of this realm that rendered links point at."""
    found = set()
    prefix = f"{realm_id}/"
    for link in links:
        path = urlsplit(link).path
        if path.startswith("user_uploads/"):
            path = "/" + path
        if not path.startswith(UPLOAD_URL_PREFIX) or path.startswith(TEMPORARY_URL_PREFIX):
            continue
        path_id = unquote(path.removeprefix(UPLOAD_URL_PREFIX))
        if path_id.startswith(prefix):
            found.add(path_id)
    return found


# Reads ----------------------------------------------------------------------------------------


def attachments_by_path_ids(session: Session, realm_id: int, path_ids: Iterable[str]) -> list[Attachment]:
    ids = set(path_ids)
    if not ids:
        return []
    return list(
        session.scalars(
            select(Attachment)
            .where(Attachment.realm_id == realm_id, Attachment.path_id.in_(ids))
            .order_by(Attachment.id)
        )
    )


def get_attachment_by_path_id(session: Session, realm_id: int, path_id: str) -> Attachment | None:
    found = attachments_by_path_ids(session, realm_id, [path_id])
    return found[0] if found else None


def linked_message_ids(session: Session, attachment_ids: Iterable[int]) -> dict[int, list[int]]:
    ids = set(attachment_ids)
    result: dict[int, list[int]] = defaultdict(list)
    if not ids:
        return result
    rows = session.execute(
        select(AttachmentMessage.attachment_id, AttachmentMessage.message_id)
        .where(AttachmentMessage.attachment_id.in_(ids))
        .order_by(AttachmentMessage.message_id)
    )
    for attachment_id, message_id in rows:
        result[attachment_id].append(message_id)
    return result


def message_attachment_ids(session: Session, message_id: int) -> set[int]:
    return set(
        session.scalars(
            select(AttachmentMessage.attachment_id).where(AttachmentMessage.message_id == message_id)
        )
    )


def format_attachments(session: Session, attachments: Iterable[Attachment]) -> list[dict[str, Any]]:
    items = list(attachments)
    messages = linked_message_ids(session, [a.id for a in items])
    return [
        {
            "id": a.id,
            "name": a.file_name,
            "path_id": a.path_id,
            "size": a.size,
            "create_time": to_timestamp(a.create_time),
            "message_ids": messages.get(a.id, []),
        }
        for a in items
    ]


def upload_space_used(session: Session, realm_id: int) -> int:
    total = session.scalar(select(func.sum(Attachment.size)).where(Attachment.realm_id == realm_id))
    return int(total or 0)


def user_attachments(session: Session, user: Requester) -> list[Attachment]:
    return list(
        session.scalars(select(Attachment).where(Attachment.owner_id == user.user_id).order_by(Attachment.id))
    )


def get_owned_attachment(session: Session, user: Requester, attachment_id: int) -> Attachment:
    attachment = get_row(session, Attachment, attachment_id)
    if attachment is None or attachment.owner_id != user.user_id:
        raise invalid_attachment()
    return attachment


def can_access_attachment(session: Session, user: Requester, attachment: Attachment) -> bool:
    """The uploader, and whoever may read a message linking the file."""
    if attachment.realm_id != user.realm_id:
        return False
    if attachment.owner_id == user.user_id:
        return True
    message_ids = linked_message_ids(session, [attachment.id]).get(attachment.id, [])
    return bool(bulk_access_message_ids(session, user, message_ids))


def claimable_attachments(session: Session, sender: Requester, path_ids: Iterable[str]) -> list[Attachment]:
    """Linked uploads a new or edited message may claim: the sender's own, or ones the
    sender can already read (so resharing works, but guessing another's path does not)."""
    return [
        a
        for a in attachments_by_path_ids(session, sender.realm_id, path_ids)
        if can_access_attachment(session, sender, a)
    ]


# Serving --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServedFile:
    """A file about to be served. No type: what it is served as is decided from its bytes
    (lib/user_content.py), whatever the row says."""

    path_id: str
    file_name: str
    # The file's own secret, which signs its temporary URLs.
    url_secret: str
    # A thumbnail format's name (lib/thumbnails.py) when a temporary URL names a thumbnail.
    variant: str | None = None


def _served(attachment: Attachment, variant: str | None = None) -> ServedFile:
    return ServedFile(attachment.path_id, attachment.file_name, attachment.url_secret, variant)


def user_for_api_key(session: Session, realm_id: int, api_key: str) -> UserProfile | None:
    """The active user of an active realm with this key (the ``api_key`` query parameter)."""
    if not api_key or "\x00" in api_key:
        return None
    user = session.scalars(select(UserProfile).where(UserProfile.api_key == api_key)).one_or_none()
    if user is None or user.realm_id != realm_id or not user.is_active or user.realm.deactivated:
        return None
    return user


def file_for_user(session: Session, user: Requester, path_id: str) -> ServedFile:
    attachment = get_attachment_by_path_id(session, user.realm_id, path_id)
    # Missing and forbidden look the same.
    if attachment is None or not can_access_attachment(session, user, attachment):
        raise JsonableError("File not found", status=404)
    return _served(attachment)


def _signature(secret: str, path_id: str, expires: int, variant: str | None) -> str:
    message = f"{path_id}:{expires}" if variant is None else f"{path_id}:{variant}:{expires}"
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()[:32]


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


def temporary_url(
    attachment: Attachment | ServedFile, now: float | None = None, *, variant: str | None = None
) -> str:
    """A URL for the file (or, with ``variant``, that thumbnail of it) that needs no
    credentials and expires in a minute, signed with the file's own secret."""
    expires = int(now if now is not None else time.time()) + TEMPORARY_URL_SECONDS
    signature = _signature(attachment.url_secret, attachment.path_id, expires, variant)
    parts = [_b64(attachment.path_id)] + ([] if variant is None else [_b64(variant)])
    token = ".".join([*parts, str(expires), signature])
    return f"{TEMPORARY_URL_PREFIX}{token}/{quote(attachment.file_name)}"


def file_for_temporary_token(
    session: Session, token: str, *, realm_id: int | None, now: float | None = None
) -> ServedFile:
    """The file a temporary URL names, if its signature holds, it has not expired and the
    file belongs to ``realm_id`` (the organization whose host the URL was opened on; None
    on the user-content origin, which is no organization's)."""
    not_found = JsonableError("File not found", status=404)
    try:
        *encoded, expires_text, signature = token.split(".")
        if len(encoded) not in (1, 2):
            raise ValueError(token)
        path_id = _unb64(encoded[0])
        variant = _unb64(encoded[1]) if len(encoded) == 2 else None
        expires = int(expires_text)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise not_found from None
    if expires < (now if now is not None else time.time()):
        raise not_found
    file_realm_id = id_in_text(path_id.split("/", 1)[0])
    if file_realm_id is None or (realm_id is not None and file_realm_id != realm_id):
        raise not_found
    attachment = get_attachment_by_path_id(session, file_realm_id, path_id)
    if attachment is None or not hmac.compare_digest(
        signature, _signature(attachment.url_secret, path_id, expires, variant)
    ):
        raise not_found
    return _served(attachment, variant)


def accessible_attachment(session: Session, user: Requester, realm_id_str: str, filename: str) -> Attachment:
    """For GET /user_uploads/{realm_id_str}/{filename}: the file, if the user may read it."""
    attachment = None
    if realm_id_str == str(user.realm_id):
        attachment = get_attachment_by_path_id(session, user.realm_id, f"{realm_id_str}/{filename}")
    if attachment is None or not can_access_attachment(session, user, attachment):
        raise JsonableError("File not found", status=404)
    return attachment
