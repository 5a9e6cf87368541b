"""Database models; importing this package registers every table on ``Base.metadata``.

Every module of the package is imported (so Alembic sees all tables); import model classes
from their own module, e.g. ``from palaver.models.users import UserProfile``. The names
below are re-exported for the foundation's modules.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from palaver.models.base import Base
from palaver.models.groups import GroupGroupMembership, UserGroup, UserGroupMembership
from palaver.models.profile_fields import CustomProfileField, CustomProfileFieldValue, ProfileFieldType
from palaver.models.realm import Realm, RealmUserDefault
from palaver.models.users import BotType, EmailVisibility, Role, UserProfile

for _info in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_info.name}")

__all__ = [
    "Base",
    "BotType",
    "CustomProfileField",
    "CustomProfileFieldValue",
    "EmailVisibility",
    "GroupGroupMembership",
    "ProfileFieldType",
    "Realm",
    "RealmUserDefault",
    "Role",
    "UserGroup",
    "UserGroupMembership",
    "UserProfile",
]
