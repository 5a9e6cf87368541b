"""Organization icon and logos (day and night): storage keys and the URLs clients show.

Uploaded images are stored under ``<realm_id>/realm/`` and served at ``/user_avatars/`` like
avatars; they are public, as Zulip's are (the login page shows them). Sources are Zulip's:
icon "G" (a Gravatar identicon, or a generated picture when Gravatar is off) or "U"
(uploaded); logos "D" (the default: the icon stands in, so clients always get a picture) or "U".
"""

from __future__ import annotations

import hashlib

from palaver.config import Settings
from palaver.lib.avatars import generated_avatar_url
from palaver.models import Realm

ICON_SIZE = 100
# Logos are wide: scaled to fit this box, aspect kept.
LOGO_MAX_WIDTH = 800
LOGO_MAX_HEIGHT = 100
MAX_ICON_FILE_SIZE_MIB = 5
MAX_LOGO_FILE_SIZE_MIB = 5

UPLOADED = "U"
DEFAULT_ICON = "G"
DEFAULT_LOGO = "D"


def icon_key(realm_id: int) -> str:
    return f"{realm_id}/realm/icon.png"


def logo_key(realm_id: int, *, night: bool) -> str:
    return f"{realm_id}/realm/{'night_logo' if night else 'logo'}.png"


def realm_icon_url(settings: Settings, realm: Realm) -> str:
    if realm.icon_source == UPLOADED:
        return f"/user_avatars/{icon_key(realm.id)}?version={realm.icon_version}"
    if settings.gravatar:
        digest = hashlib.md5(realm.string_id.encode(), usedforsecurity=False).hexdigest()
        return f"https://secure.gravatar.com/avatar/{digest}?d=identicon&version={realm.icon_version}"
    # The organization's initials, coloured by its ID like a person's default avatar.
    return generated_avatar_url(realm.id, realm.name, realm.icon_version)


def realm_logo_url(settings: Settings, realm: Realm, *, night: bool) -> str:
    source = realm.night_logo_source if night else realm.logo_source
    if source != UPLOADED:
        return realm_icon_url(settings, realm)
    version = realm.night_logo_version if night else realm.logo_version
    return f"/user_avatars/{logo_key(realm.id, night=night)}?version={version}"


def realm_image_fields(settings: Settings, realm: Realm) -> dict[str, str]:
    """The /register ``realm_*`` keys for the icon and logos (update events use the same names)."""
    return {
        "realm_icon_url": realm_icon_url(settings, realm),
        "realm_icon_source": realm.icon_source,
        "realm_logo_url": realm_logo_url(settings, realm, night=False),
        "realm_logo_source": realm.logo_source,
        "realm_night_logo_url": realm_logo_url(settings, realm, night=True),
        "realm_night_logo_source": realm.night_logo_source,
    }
