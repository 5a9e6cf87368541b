"""A sign-in provider's groups applied to the person signing in: their role and the user
groups ``[auth.oidc.NAME]`` ``role_map`` / ``group_map`` tie to the provider's groups."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from palaver.actions.user_groups import do_set_provider_group_membership
from palaver.actions.users import do_change_user_role
from palaver.auth_config import OAuthProvider, SamlIdp
from palaver.db.transaction import transaction
from palaver.lib.provider_groups import mapped_role, wanted_group_memberships
from palaver.lib.user_groups import get_named_group_by_name
from palaver.lib.users import is_last_owner
from palaver.models import UserProfile

logger = logging.getLogger(__name__)


def do_apply_provider_groups(
    session: Session, user: UserProfile, provider: OAuthProvider | SamlIdp, groups: frozenset[str]
) -> None:
    """Give the user the role and the mapped user groups their provider groups say, each
    change with its events. The organization's last owner is never demoted this way."""
    with transaction(session):
        role = mapped_role(provider, groups)
        if role is not None and role != user.role:
            if is_last_owner(session, user):
                logger.warning(
                    "%s: not demoting %s, the organization's only owner", provider.name, user.delivery_email
                )
            else:
                do_change_user_role(session, user, role, acting_user=None)
        for name, member in wanted_group_memberships(provider, groups).items():
            group = get_named_group_by_name(session, user.realm_id, name)
            if group is None or group.is_system_group:
                logger.warning("%s: group_map names %r, which is no user group here", provider.name, name)
                continue
            do_set_provider_group_membership(session, group, user.id, member=member)
