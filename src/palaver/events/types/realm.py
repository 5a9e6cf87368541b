"""Events about the organization: realm settings, its administration (playgrounds, domains, custom emoji,
linkifiers, profile fields), invites, deactivation and exports."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none
from palaver.events.types.user_groups import GroupSettingPayload

# realm (organization settings) and realm_user_settings_defaults ------------------------------


class RealmUpdate(Event):
    type: Literal["realm"] = "realm"
    op: Literal["update"] = "update"
    property: str
    value: bool | int | str | None


class RealmUpdateDict(Event):
    type: Literal["realm"] = "realm"
    op: Literal["update_dict"] = "update_dict"
    # Always "default"; kept for clients older than the update_dict form.
    property: Literal["default"] = "default"
    # Settings' new values; ``authentication_methods`` is a dict of method -> its state.
    data: dict[str, GroupSettingPayload | bool | int | str | dict[str, dict[str, bool | str]] | None]


class RealmUserSettingsDefaultsUpdate(Event):
    type: Literal["realm_user_settings_defaults"] = "realm_user_settings_defaults"
    op: Literal["update"] = "update"
    property: str
    value: bool | int | str


# realm administration: playgrounds, domains, custom emoji, linkifiers, profile fields ----------


class RealmPlaygroundPayload(Payload):
    id: int
    name: str
    pygments_language: str
    url_template: str


class RealmPlaygrounds(Event):
    """The organization's whole list of code playgrounds, after any change."""

    type: Literal["realm_playgrounds"] = "realm_playgrounds"
    realm_playgrounds: list[RealmPlaygroundPayload]


class RealmDomainPayload(Payload):
    domain: str
    allow_subdomains: bool


class RealmDomainsAdd(Event):
    type: Literal["realm_domains"] = "realm_domains"
    op: Literal["add"] = "add"
    realm_domain: RealmDomainPayload


class RealmDomainsChange(Event):
    type: Literal["realm_domains"] = "realm_domains"
    op: Literal["change"] = "change"
    realm_domain: RealmDomainPayload


class RealmDomainsRemove(Event):
    type: Literal["realm_domains"] = "realm_domains"
    op: Literal["remove"] = "remove"
    domain: str


class RealmEmojiPayload(Payload):
    id: str
    name: str
    source_url: str
    still_url: str | None
    deactivated: bool
    author_id: int | None


class RealmEmojiUpdate(Event):
    """Every custom emoji of the organization, deactivated ones included.

    For clients without the ``individual_emoji_changes`` capability; the others get the
    ``add`` or ``update_one`` event published beside it (``events/tailoring.py``).
    """

    type: Literal["realm_emoji"] = "realm_emoji"
    op: Literal["update"] = "update"
    realm_emoji: dict[str, RealmEmojiPayload]


class RealmEmojiAdd(Event):
    """One new custom emoji, for clients with the ``individual_emoji_changes`` capability."""

    type: Literal["realm_emoji"] = "realm_emoji"
    op: Literal["add"] = "add"
    emoji: RealmEmojiPayload


class RealmEmojiChangedData(Payload):
    deactivated: bool


class RealmEmojiUpdateOne(Event):
    """The changed properties of one custom emoji (only ``deactivated`` changes), for clients
    with the ``individual_emoji_changes`` capability."""

    type: Literal["realm_emoji"] = "realm_emoji"
    op: Literal["update_one"] = "update_one"
    emoji_id: str
    data: RealmEmojiChangedData


class LinkifierPayload(Payload):
    id: int
    pattern: str
    url_template: str


class RealmLinkifiers(Event):
    """The organization's linkifiers in the order clients must apply them."""

    type: Literal["realm_linkifiers"] = "realm_linkifiers"
    realm_linkifiers: list[LinkifierPayload]


class CustomProfileFieldPayload(Payload):
    id: int
    type: int
    order: int
    name: str
    hint: str
    field_data: str
    required: bool
    editable_by_user: bool
    # Sent only when true, as clients read a missing value as false.
    display_in_profile_summary: bool | None = omit_none()


class CustomProfileFields(Event):
    """All of the organization's custom profile fields, after any change to one."""

    type: Literal["custom_profile_fields"] = "custom_profile_fields"
    fields: list[CustomProfileFieldPayload]


# invites ------------------------------------------------------------------------------------


class InvitesChanged(Event):
    """The invitations a user may manage changed; clients refetch GET /invites."""

    type: Literal["invites_changed"] = "invites_changed"


class RealmDeactivated(Event):
    """Sent to every user of a realm as it is deactivated; their queues then close."""

    type: Literal["realm"] = "realm"
    op: Literal["deactivated"] = "deactivated"
    realm_id: int


class RealmFilters(Event):
    """Legacy linkifier event, no longer sent since feature level 176 (``realm_linkifiers``)."""

    type: Literal["realm_filters"] = "realm_filters"
    realm_filters: list[list[int | str]]


class RealmExportPayload(Payload):
    id: int
    export_time: float
    acting_user_id: int
    export_url: str | None
    deleted_timestamp: float | None
    failed_timestamp: float | None
    pending: bool
    export_type: int


class RealmExport(Event):
    type: Literal["realm_export"] = "realm_export"
    exports: list[RealmExportPayload]


class RealmExportConsent(Event):
    type: Literal["realm_export_consent"] = "realm_export_consent"
    user_id: int
    consented: bool
