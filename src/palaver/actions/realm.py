"""Creating organizations, with the system groups and defaults every realm has."""

from __future__ import annotations

import itertools
import re

from sqlalchemy.orm import Session

from palaver.actions.new_channels import NewChannel, create_initial_channels
from palaver.actions.users import do_create_user
from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm import get_realm_by_string_id
from palaver.lib.user_groups import (
    SYSTEM_GROUP_CHAIN,
    SYSTEM_GROUP_DESCRIPTIONS,
    SYSTEM_GROUP_NAMES,
)
from palaver.models import GroupGroupMembership, Realm, RealmUserDefault, Role, UserGroup, UserProfile
from palaver.models.groups import GROUP_PERMISSION_SETTINGS

_STRING_ID = re.compile(r"^(|[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?)$")

# Who holds each realm permission in a new organization.
DEFAULT_REALM_GROUP_SETTINGS = {
    "can_access_all_users_group": "role:everyone",
    "can_add_custom_emoji_group": "role:members",
    "can_add_subscribers_group": "role:members",
    "can_create_bots_group": "role:members",
    "can_create_groups": "role:members",
    "can_create_private_channel_group": "role:members",
    "can_create_public_channel_group": "role:members",
    "can_create_web_public_channel_group": "role:owners",
    "can_create_write_only_bots_group": "role:members",
    "can_delete_any_message_group": "role:administrators",
    "can_delete_own_message_group": "role:everyone",
    "can_invite_users_group": "role:members",
    "can_manage_all_groups": "role:owners",
    "can_mention_many_users_group": "role:administrators",
    "can_move_messages_between_channels_group": "role:members",
    "can_move_messages_between_topics_group": "role:everyone",
    "can_resolve_topics_group": "role:everyone",
    "can_set_delete_message_policy_group": "role:moderators",
    "can_set_topics_policy_group": "role:moderators",
    "can_summarize_topics_group": "role:everyone",
    "create_multiuse_invite_group": "role:administrators",
    "direct_message_initiator_group": "role:everyone",
    "direct_message_permission_group": "role:everyone",
}


# The public default channels a new organization starts with, as in Zulip (which adds a
# third, named after and about Zulip itself). New users join all of them; "general" also
# takes the announcements of new channels and of server updates. New-user announcements
# start off, as they have in Zulip since it dropped its private "core team" channel.
INITIAL_CHANNELS = (
    NewChannel(name="sandbox", description="A place to try things out. :test_tube:", is_default_stream=True),
    NewChannel(name="general", description="Conversations for the whole team.", is_default_stream=True),
)
ANNOUNCEMENTS_CHANNEL = "general"


def check_string_id(string_id: str) -> str:
    if not _STRING_ID.match(string_id):
        raise JsonableError("Organization ID must be up to 40 lowercase letters, digits and inner hyphens")
    return string_id


def _create_system_groups(session: Session, realm: Realm) -> dict[str, UserGroup]:
    groups: dict[str, UserGroup] = {}
    for name in SYSTEM_GROUP_NAMES:
        group = UserGroup(
            realm_id=realm.id, name=name, description=SYSTEM_GROUP_DESCRIPTIONS[name], is_system_group=True
        )
        session.add(group)
        groups[name] = group
    session.flush()
    # System groups are managed by roles alone: nobody may join, leave or manage them.
    nobody = groups["role:nobody"].id
    for group in groups.values():
        for setting in GROUP_PERMISSION_SETTINGS:
            setattr(group, setting, nobody)
        group.can_mention_group = groups["role:everyone"].id
    for outer, inner in itertools.pairwise(SYSTEM_GROUP_CHAIN):
        session.add(GroupGroupMembership(supergroup_id=groups[outer].id, subgroup_id=groups[inner].id))
    return groups


def do_create_realm(
    session: Session,
    *,
    string_id: str,
    name: str,
    owner_email: str,
    owner_full_name: str,
    owner_password_hash: str | None,
    email_host: str,
    description: str = "",
    default_channels: bool = True,
) -> tuple[Realm, UserProfile]:
    """Create a realm, its system groups, default settings and its first owner.

    ``default_channels`` False leaves out the initial channels (test fixtures build
    their own).
    """
    check_string_id(string_id)
    name = name.strip()
    if not name or len(name) > 40:
        raise JsonableError("Organization name must be 1 to 40 characters")
    with transaction(session):
        if get_realm_by_string_id(session, string_id) is not None:
            raise JsonableError(f"An organization with ID '{string_id}' already exists")
        realm = Realm(string_id=string_id, name=name, description=description)
        session.add(realm)
        session.flush()
        session.add(RealmUserDefault(realm_id=realm.id))
        groups = _create_system_groups(session, realm)
        for setting, group_name in DEFAULT_REALM_GROUP_SETTINGS.items():
            setattr(realm, setting, groups[group_name].id)
        session.flush()
        if default_channels:
            # Before the owner, who joins them as every new user joins default channels.
            streams = create_initial_channels(session, realm, INITIAL_CHANNELS)
            announcements = next(s for s in streams if s.name == ANNOUNCEMENTS_CHANNEL)
            realm.new_stream_announcements_stream_id = announcements.id
            realm.zulip_update_announcements_stream_id = announcements.id
            session.flush()
        owner = do_create_user(
            session,
            realm,
            email=owner_email,
            full_name=owner_full_name,
            password_hash=owner_password_hash,
            email_host=email_host,
            role=Role.OWNER,
        )
    return realm, owner
