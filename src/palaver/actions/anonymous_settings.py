"""Tell clients about permission settings a reactivated user is part of again.

A setting that names individual users holds an anonymous group. Clients drop a deactivated
user from every group, those included, and a fresh ``/register`` leaves deactivated users
out of them; so when the user returns, each setting that still lists them is sent again.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx
from palaver.events import types as ev
from palaver.lib.channels import metadata_access_user_ids
from palaver.lib.group_settings import RenderedGroupSetting, render_group_settings
from palaver.lib.realm import active_user_ids
from palaver.models import Realm, UserGroup, UserGroupMembership
from palaver.models.channels import STREAM_GROUP_SETTINGS, Stream
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.models.realm import REALM_GROUP_SETTINGS


def _payload(rendered: RenderedGroupSetting) -> ev.GroupSettingPayload:
    return rendered if isinstance(rendered, int) else ev.GroupSettingObject(**rendered)


def send_settings_naming_user(tx: Tx, session: Session, realm: Realm, user_id: int) -> None:
    anonymous = set(
        session.scalars(
            select(UserGroupMembership.user_group_id)
            .join(UserGroup, UserGroup.id == UserGroupMembership.user_group_id)
            .where(UserGroupMembership.user_profile_id == user_id, UserGroup.name.is_(None))
        )
    )
    if not anonymous:
        return
    rendered = render_group_settings(session, anonymous)
    everyone = active_user_ids(session, realm.id)
    groups = session.scalars(
        select(UserGroup).where(UserGroup.realm_id == realm.id, UserGroup.name.is_not(None))
    )
    for group in groups:
        data = {
            s: _payload(rendered[getattr(group, s)])
            for s in GROUP_PERMISSION_SETTINGS
            if getattr(group, s) in anonymous
        }
        if data:
            tx.send_event(
                realm.id, ev.UserGroupUpdate(group_id=group.id, data=ev.UserGroupChange(**data)), everyone
            )
    data = {
        s: _payload(rendered[getattr(realm, s)])
        for s in REALM_GROUP_SETTINGS
        if getattr(realm, s) in anonymous
    }
    if data:
        tx.send_event(realm.id, ev.RealmUpdateDict(data=data), everyone)
    streams = session.scalars(select(Stream).where(Stream.realm_id == realm.id))
    for stream in streams:
        for setting in STREAM_GROUP_SETTINGS:
            if getattr(stream, setting) in anonymous:
                event = ev.StreamUpdate(
                    stream_id=stream.id,
                    name=stream.name,
                    property=setting,
                    value=_payload(rendered[getattr(stream, setting)]),
                )
                tx.send_event(realm.id, event, metadata_access_user_ids(session, stream))
