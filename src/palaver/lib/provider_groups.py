"""What a provider's groups mean here: the role and the user groups ``[auth.oidc.NAME]``
``role_map`` / ``group_map`` give a person in the groups its ``groups_claim`` lists."""

from __future__ import annotations

from palaver.auth_config import OAuthProvider, SamlIdp
from palaver.models import Role

ROLES = {
    "owner": Role.OWNER,
    "administrator": Role.ADMINISTRATOR,
    "moderator": Role.MODERATOR,
    "member": Role.MEMBER,
    "guest": Role.GUEST,
}


def groups_from_claim(value: object) -> frozenset[str] | None:
    """A groups claim as providers send it: a list of names, or one space-separated string."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(str(item) for item in value if isinstance(item, str | int))
    return None


def mapped_role(provider: OAuthProvider | SamlIdp, groups: frozenset[str]) -> int | None:
    """The role these groups give (the highest mapped; ``default_role`` when none maps),
    or None when the provider maps no roles."""
    if not provider.role_map:
        return None
    roles = [ROLES[role] for group, role in provider.role_map.items() if group in groups]
    # Lower numbers are higher roles (owner 100, guest 600).
    return min(roles) if roles else ROLES[provider.default_role]


def wanted_group_memberships(provider: OAuthProvider | SamlIdp, groups: frozenset[str]) -> dict[str, bool]:
    """Each mapped Palaver group's name, and whether the person belongs in it (any of the
    provider groups mapped to it is one of theirs)."""
    wanted: dict[str, bool] = {}
    for provider_group, name in provider.group_map.items():
        wanted[name] = wanted.get(name, False) or provider_group in groups
    return wanted
