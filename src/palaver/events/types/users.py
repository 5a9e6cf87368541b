"""Events about users and bots: realm_user, realm_bot and a user's own settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from palaver.events.types.base import Event, Payload, omit_none

# realm_user ---------------------------------------------------------------------------


class ProfileDataValue(Payload):
    value: str
    rendered_value: str | None = omit_none()


class RealmUserPerson(Payload):
    user_id: int
    email: str
    delivery_email: str | None
    full_name: str
    date_joined: str
    is_active: bool
    is_owner: bool
    is_admin: bool
    is_guest: bool
    is_bot: bool
    bot_type: int | None
    bot_owner_id: int | None
    role: int
    timezone: str
    avatar_url: str | None
    avatar_version: int
    is_imported_stub: bool
    profile_data: dict[str, ProfileDataValue] | None = omit_none()


class RealmUserAdd(Event):
    type: Literal["realm_user"] = "realm_user"
    op: Literal["add"] = "add"
    person: RealmUserPerson


class PersonFullName(Payload):
    user_id: int
    full_name: str


class PersonRole(Payload):
    user_id: int
    role: int


class PersonBotOwner(Payload):
    user_id: int
    bot_owner_id: int


class PersonAvatar(Payload):
    user_id: int
    avatar_source: str
    avatar_url: str | None
    avatar_url_medium: str | None
    avatar_version: int


class PersonTimezone(Payload):
    user_id: int
    email: str
    timezone: str


class PersonDeliveryEmail(Payload):
    user_id: int
    delivery_email: str | None


class CustomProfileFieldChange(Payload):
    id: int
    value: str | None
    rendered_value: str | None = omit_none()


class PersonCustomProfileField(Payload):
    user_id: int
    custom_profile_field: CustomProfileFieldChange


class PersonNewEmail(Payload):
    user_id: int
    new_email: str


class PersonImportedStub(Payload):
    user_id: int
    is_imported_stub: Literal[False]


class PersonIsActive(Payload):
    user_id: int
    is_active: bool


RealmUserUpdatePerson = (
    PersonFullName
    | PersonRole
    | PersonBotOwner
    | PersonAvatar
    | PersonTimezone
    | PersonDeliveryEmail
    | PersonCustomProfileField
    | PersonNewEmail
    | PersonImportedStub
    | PersonIsActive
)


class RealmUserUpdate(Event):
    type: Literal["realm_user"] = "realm_user"
    op: Literal["update"] = "update"
    person: RealmUserUpdatePerson


class PersonRemoved(Payload):
    user_id: int
    full_name: str


class RealmUserRemove(Event):
    """Sent when a user becomes inaccessible to the recipient."""

    type: Literal["realm_user"] = "realm_user"
    op: Literal["remove"] = "remove"
    person: PersonRemoved


# realm_bot ----------------------------------------------------------------------------


class BotPayload(Payload):
    user_id: int
    full_name: str
    email: str
    api_key: str
    bot_type: int
    is_active: bool
    avatar_url: str | None
    owner_id: int | None
    default_sending_stream: str | None
    default_events_register_stream: str | None
    default_all_public_streams: bool
    services: list[dict[str, Any]]


class RealmBotAdd(Event):
    type: Literal["realm_bot"] = "realm_bot"
    op: Literal["add"] = "add"
    bot: BotPayload


class BotChange(Payload):
    """The bot's ID and the one property that changed."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)
    user_id: int


class RealmBotUpdate(Event):
    type: Literal["realm_bot"] = "realm_bot"
    op: Literal["update"] = "update"
    bot: BotChange


class BotRef(Payload):
    user_id: int


class RealmBotDelete(Event):
    type: Literal["realm_bot"] = "realm_bot"
    op: Literal["delete"] = "delete"
    bot: BotRef


# user_settings ------------------------------------------------------------------------


class UserSettingsUpdate(Event):
    type: Literal["user_settings"] = "user_settings"
    op: Literal["update"] = "update"
    property: str
    value: bool | int | str
    language_name: str | None = omit_none()


class RealmBotRemovedBot(Payload):
    user_id: int
    full_name: str


class RealmBotRemove(Event):
    """Deprecated: no longer sent since feature level 222 (``realm_bot`` delete replaced it)."""

    type: Literal["realm_bot"] = "realm_bot"
    op: Literal["remove"] = "remove"
    bot: RealmBotRemovedBot


class UpdateDisplaySettings(Event):
    """Legacy copy of a ``user_settings`` update of a display setting, for clients without
    the ``user_settings_object`` capability."""

    type: Literal["update_display_settings"] = "update_display_settings"
    user: str
    setting_name: str
    setting: bool | int | str
    language_name: str | None = omit_none()


class UpdateGlobalNotifications(Event):
    """Legacy copy of a ``user_settings`` update of a notification setting."""

    type: Literal["update_global_notifications"] = "update_global_notifications"
    user: str
    notification_name: str
    setting: bool | int | str


class HasZoomToken(Event):
    type: Literal["has_zoom_token"] = "has_zoom_token"
    value: bool
