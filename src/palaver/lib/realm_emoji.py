"""Custom (realm) emoji: names, image checks, reads, and the lookup reactions use.

Images live in file storage under ``<realm_id>/emoji/images/<emoji_id>.<ext>`` and are
served at ``/user_avatars/<same key>``, the ``source_url`` clients load relative to the
organization's URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.models.realm_emoji import RealmEmoji

MAX_EMOJI_NAME_LENGTH = 60
# Custom emoji are stored scaled down to fit this square (pixels), as Zulip does.
EMOJI_IMAGE_SIZE = 64
SOURCE_URL_PREFIX = "/user_avatars/"

_VALID_NAME = re.compile(r"^[0-9a-z\-_]+(?<![\-_])$")
_NAME_CHARS = re.compile(r"^[0-9a-z\-_]+$")

# Leading bytes of each image format accepted, with its extension and content type.
_IMAGE_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png", "image/png"),
    (b"GIF87a", "gif", "image/gif"),
    (b"GIF89a", "gif", "image/gif"),
    (b"\xff\xd8\xff", "jpg", "image/jpeg"),
)
CONTENT_TYPES = {"png": "image/png", "gif": "image/gif", "jpg": "image/jpeg", "webp": "image/webp"}


def normalize_emoji_name(name: str) -> str:
    # Clients treat case, spaces and underscores alike in emoji names; the stored form is
    # lower-case with underscores.
    return name.strip().lower().replace(" ", "_")


def check_emoji_name(name: str) -> None:
    if not name:
        raise JsonableError("Emoji name is missing")
    if len(name) > MAX_EMOJI_NAME_LENGTH:
        raise JsonableError(f"Emoji name is too long (limit: {MAX_EMOJI_NAME_LENGTH} characters)")
    if _VALID_NAME.match(name):
        return
    if _NAME_CHARS.match(name):
        raise JsonableError("Emoji names must end with either a letter or digit.")
    raise JsonableError(
        "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores."
    )


@dataclass(frozen=True)
class ImageKind:
    extension: str
    content_type: str


def image_kind(data: bytes) -> ImageKind:
    """The image format of an upload, from its bytes (the client's content type is not trusted)."""
    for signature, extension, content_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return ImageKind(extension, content_type)
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ImageKind("webp", "image/webp")
    raise JsonableError("Invalid image format")


def emoji_storage_key(realm_id: int, file_name: str) -> str:
    return f"{realm_id}/emoji/images/{file_name}"


def source_url(emoji: RealmEmoji) -> str:
    return SOURCE_URL_PREFIX + emoji_storage_key(emoji.realm_id, emoji.file_name)


def still_file_name(emoji: RealmEmoji) -> str:
    """The first frame of an animated emoji, as PNG (``<id>.png`` under ``still/``)."""
    return f"still/{emoji.id}.png"


def still_url(emoji: RealmEmoji) -> str | None:
    if not emoji.is_animated:
        return None
    return SOURCE_URL_PREFIX + emoji_storage_key(emoji.realm_id, still_file_name(emoji))


def get_all_realm_emoji(session: Session, realm_id: int) -> list[RealmEmoji]:
    return list(
        session.scalars(select(RealmEmoji).where(RealmEmoji.realm_id == realm_id).order_by(RealmEmoji.id))
    )


def format_realm_emoji(emoji: RealmEmoji) -> dict[str, Any]:
    return {
        "id": str(emoji.id),
        "name": emoji.name,
        "source_url": source_url(emoji),
        "still_url": still_url(emoji),
        "deactivated": emoji.deactivated,
        "author_id": emoji.author_id,
    }


def realm_emoji_dict(session: Session, realm_id: int) -> dict[str, dict[str, Any]]:
    """The ``realm_emoji`` object of /register and events: every emoji, keyed by ID."""
    return {str(e.id): format_realm_emoji(e) for e in get_all_realm_emoji(session, realm_id)}


def active_realm_emoji_by_name(session: Session, realm_id: int, name: str) -> RealmEmoji | None:
    return session.scalars(
        select(RealmEmoji).where(
            RealmEmoji.realm_id == realm_id, RealmEmoji.name == name, RealmEmoji.deactivated.is_(False)
        )
    ).one_or_none()


def realm_emoji_for_reaction(
    session: Session, realm_id: int, *, emoji_name: str | None, emoji_code: str | None, adding: bool
) -> RealmEmoji | None:
    """The custom emoji a ``realm_emoji`` reaction names, or None when there is no such emoji.

    A reaction names the emoji by code (its ID, as a string) and/or name. Adding a reaction
    needs an active emoji; removing one may name a deactivated emoji, since reactions made
    before the deactivation remain. When both are given they must agree.
    """
    emoji: RealmEmoji | None = None
    if emoji_code is not None:
        if not emoji_code.isascii() or not emoji_code.isdigit() or not is_storable_id(int(emoji_code)):
            return None
        emoji = session.get(RealmEmoji, int(emoji_code))
        if emoji is None or emoji.realm_id != realm_id:
            return None
        if emoji_name is not None and emoji.name != emoji_name:
            return None
    elif emoji_name is not None:
        emoji = active_realm_emoji_by_name(session, realm_id, emoji_name)
    if emoji is None or (adding and emoji.deactivated):
        return None
    return emoji
