"""Rendering message content: the Markdown context (who and what it may mention or link to).

Only the candidates the content names are loaded (``possible_mention_names``...), then
``lib/markdown/render.render_message`` renders and ``lib/thumbnails`` adds media markup.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.channels import get_streams_by_names, has_metadata_access, viewer_for
from palaver.lib.ids import storable_ids
from palaver.lib.linkifiers import linkifiers_for_realm
from palaver.lib.markdown.contract import GroupRef, MarkdownContext, RenderResult, StreamRef, UserRef
from palaver.lib.markdown.render import render_message
from palaver.lib.markdown.syntax import (
    possible_channel_names,
    possible_group_names,
    possible_mention_ids,
    possible_mention_names,
)
from palaver.lib.thumbnails import apply_media_markup
from palaver.models import UserGroup, UserProfile
from palaver.models.requester import Requester


def markdown_context(session: Session, sender: Requester, content: str, realm_url: str) -> MarkdownContext:
    """What the content may mention or link to, loading only the candidates it names."""
    names = possible_mention_names(content)
    ids = set(storable_ids(possible_mention_ids(content)))
    users_by_name: dict[str, UserRef] = {}
    users_by_id: dict[int, UserRef] = {}
    if names:
        lowered = {n.lower() for n in names}
        # SQLite's lower() folds ASCII only: exact names catch the rest as typed.
        rows = session.execute(
            select(UserProfile.id, UserProfile.full_name)
            .where(
                UserProfile.realm_id == sender.realm_id,
                UserProfile.is_active,
                func.lower(UserProfile.full_name).in_(lowered) | UserProfile.full_name.in_(names),
            )
            .order_by(UserProfile.id)
        )
        for user_id, full_name in rows:
            ref = UserRef(user_id, full_name)
            users_by_name.setdefault(full_name.lower(), ref)
            users_by_id[user_id] = ref
    if ids:
        rows = session.execute(
            select(UserProfile.id, UserProfile.full_name).where(
                UserProfile.realm_id == sender.realm_id, UserProfile.id.in_(ids)
            )
        )
        for user_id, full_name in rows:
            users_by_id[user_id] = UserRef(user_id, full_name)

    groups_by_name: dict[str, GroupRef] = {}
    group_names = possible_group_names(content)
    if group_names:
        lowered = {n.lower() for n in group_names}
        for group in session.scalars(
            select(UserGroup).where(
                UserGroup.realm_id == sender.realm_id,
                UserGroup.name.is_not(None),
                UserGroup.deactivated.is_(False),
                func.lower(UserGroup.name).in_(lowered) | UserGroup.name.in_(group_names),
            )
        ):
            assert group.name is not None
            groups_by_name[group.name.lower()] = GroupRef(group.id, group.name)

    streams_by_name: dict[str, StreamRef] = {}
    channel_names = possible_channel_names(content)
    if channel_names:
        viewer = viewer_for(session, sender)
        for key, stream in get_streams_by_names(session, sender.realm_id, channel_names).items():
            # Links to channels the sender cannot see would reveal them.
            if has_metadata_access(viewer, stream):
                streams_by_name[key] = StreamRef(stream.id, stream.name)

    return MarkdownContext(
        realm_url=realm_url,
        sender_id=sender.user_id,
        sender_full_name=sender.full_name,
        users_by_name=users_by_name,
        users_by_id=users_by_id,
        groups_by_name=groups_by_name,
        streams_by_name=streams_by_name,
        linkifiers=linkifiers_for_realm(session, sender.realm_id),
    )


def render_content(session: Session, sender: Requester, content: str, realm_url: str) -> RenderResult:
    rendered = render_message(content, markdown_context(session, sender, content, realm_url))
    # Uploaded images show their thumbnails (or a placeholder while they are made).
    return apply_media_markup(session, realm_settings(session, sender.realm_id), rendered)
