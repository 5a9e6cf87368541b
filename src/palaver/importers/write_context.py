"""What an import's writing steps share: the new organization as it is being written, the
new IDs of what the source names by its own keys, and the steps' common helpers (an action
in a savepoint, an emoji by name, a file stored once however often messages attach it)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from palaver.importers.model import ImportedFile, ImportedMessage, ImportSource, Report, Summary
from palaver.importers.narrow_links import NewIds
from palaver.importers.threads import ScratchMap
from palaver.lib.attachments import new_path_id, new_url_secret, upload_url
from palaver.lib.emoji import emoji_code_for_name
from palaver.lib.exceptions import JsonableError
from palaver.lib.markdown.contract import MarkdownContext
from palaver.lib.storage import FileStorage
from palaver.models import Base, Realm, UserProfile
from palaver.models.attachments import Attachment
from palaver.services import Services
from palaver.timeutil import utcnow

T = TypeVar("T")


def table_of(model: type[Base]) -> Table:
    """The model's table, for Core inserts: no ORM bookkeeping per row."""
    return Base.metadata.tables[model.__tablename__]


def _link_text(name: str) -> str:
    return re.sub(r"[\[\]\n]", "", name) or "file"


class WriteContext:
    """One import's state, passed to each writing step (``writer.py`` runs them in order)."""

    # Set as the organization is written (writer.run), before any step that reads them.
    email_host: str
    realm: Realm
    owner: UserProfile
    realm_url: str
    active_keys: set[str]
    folder_ids: dict[str, int]
    group_ids: dict[str, int]
    context: MarkdownContext  # the messages' rendering context (write_messages.add_messages)

    def __init__(
        self,
        services: Services,
        session: Session,
        source: ImportSource,
        storage: FileStorage,
        written: ScratchMap,
        batch_size: int,
    ) -> None:
        self.services, self.session, self.source = services, session, source
        self.storage, self.written, self.batch_size = storage, written, batch_size
        self.report: Report = source.report
        self.summary = Summary()
        self.user_ids: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.channels: dict[str, tuple[int, list[int]]] = {}  # key -> (recipient, subscriber IDs)
        self.stream_ids: dict[str, int] = {}
        # The new ID of each message written that has a source ID (a reminder, a navigation
        # view or a later message's link may name it): on disk, as it grows with the history.
        self.message_ids = ScratchMap()
        self.new_ids = NewIds(
            channel=self.stream_ids.get, user=self.user_ids.get, message=self.new_message_id
        )
        # By the conversation's sorted user IDs: one per conversation, so on disk.
        self.dm_recipients = ScratchMap()
        self.first_message: dict[int, int] = {}
        self.aliases: dict[str, str] = {}  # a duplicate user's key -> the kept user's key
        self.channel_names: set[str] = set()  # their name_key: unique regardless of case
        self.custom_emoji: dict[str, int] = {}
        self.stored_files = ScratchMap()  # file key -> (attachment ID, URL)

    def close(self) -> None:
        self.dm_recipients.close()
        self.stored_files.close()
        self.message_ids.close()

    def new_message_id(self, source_id: str) -> int | None:
        found = self.message_ids.get(source_id)
        return None if found is None else found[0]

    def sender_context(self, sender_id: int) -> MarkdownContext:
        return dataclasses.replace(self.context, sender_id=sender_id, sender_full_name=self.names[sender_id])

    def attempt(self, what: str, location: str, work: Callable[[], T]) -> T | None:
        """Run one action in a savepoint; a refusal is counted and leaves no trace."""
        try:
            with self.session.begin_nested():
                return work()
        except JsonableError as e:
            self.report.skip(f"{what} refused ({e.msg})", location)
        except ValueError as e:
            self.report.skip(f"{what} refused ({e})", location)
        return None

    def emoji(self, name: str) -> tuple[str, str, str] | None:
        """(reaction type, emoji code, name) for a custom emoji or a Unicode emoji's name (any alias)."""
        if name in self.custom_emoji:
            return "realm_emoji", str(self.custom_emoji[name]), name
        code = emoji_code_for_name(name)
        if code is not None:
            return "unicode_emoji", code, name
        return None

    def active_user(self, key: str) -> UserProfile | None:
        if key not in self.active_keys or key not in self.user_ids:
            return None
        return self.session.get(UserProfile, self.user_ids[key])

    def content_with_files(self, message: ImportedMessage, sender_id: int) -> tuple[str, list[int]]:
        content = message.content
        attachment_ids: list[int] = []
        for spec in message.files:
            link = self.stored_files.get(spec.key) if spec.key else None
            if link is None:
                link = self.store_file(spec, sender_id, message.location)
                if link is None:
                    continue
                if spec.key:
                    self.stored_files.set(spec.key, link)
            attachment_id, url = link
            attachment_ids.append(attachment_id)
            if spec.replaces and spec.replaces in content:
                content = content.replace(spec.replaces, url)
                continue
            content = (
                f"{content}\n[{_link_text(spec.name)}]({url})"
                if content
                else f"[{_link_text(spec.name)}]({url})"
            )
        return content, attachment_ids

    def store_file(self, spec: ImportedFile, sender_id: int, location: str) -> tuple[int, str] | None:
        data = spec.load()
        if data is None:
            self.report.skip("file that could not be downloaded or read", f"{location}: {spec.name}")
            return None
        path_id = new_path_id(self.realm.id, spec.name or "file")
        self.storage.save(path_id, data, spec.content_type)
        self.written.add(path_id)
        owner_id = self.user_ids.get(spec.owner, sender_id)
        attachment_id = self.session.scalar(
            insert(Attachment)
            .values(
                realm_id=self.realm.id,
                owner_id=owner_id,
                path_id=path_id,
                file_name=path_id.rsplit("/", 1)[-1],
                content_type=(spec.content_type or None) and spec.content_type[:255],
                size=len(data),
                create_time=spec.created or utcnow(),
                url_secret=new_url_secret(),
            )
            .returning(Attachment.id)
        )
        assert attachment_id is not None
        self.summary.files += 1
        return attachment_id, upload_url(path_id)
