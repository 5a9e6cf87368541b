"""One model per event type and op.

Actions build these models, so an event that does not match its documented shape fails
where it is made; tests also validate every event a queue receives with ``validate_event``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_registry: dict[tuple[str, str | None], type[Event]] = {}


def _omit_none() -> Any:
    """A field that clients expect to be absent, not null, when it has no value."""
    return Field(default=None, exclude_if=lambda v: v is None)


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        type_field = cls.model_fields.get("type")
        op_field = cls.model_fields.get("op")
        if type_field is None or type_field.default in (None, ...):
            return
        if cls.__name__.startswith("_"):
            # A base shared by the ops of one type (``_TypingBase``) is not an event: an
            # event of its type without an ``op`` must not validate against it.
            return
        op = op_field.default if op_field is not None else None
        _registry[(type_field.default, op)] = cls

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def validate_event(data: dict[str, Any]) -> Event:
    """Check an event as a client receives it (with ``id``) against its model."""
    body = {k: v for k, v in data.items() if k != "id"}
    model = _registry.get((body.get("type", ""), body.get("op")))
    if model is None:
        raise ValueError(f"no event model for type={body.get('type')!r} op={body.get('op')!r}")
    return model.model_validate(body)


def registered_event_models() -> dict[tuple[str, str | None], type[Event]]:
    return dict(_registry)


# realm_user ---------------------------------------------------------------------------


class ProfileDataValue(Payload):
    value: str
    rendered_value: str | None = _omit_none()


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
    profile_data: dict[str, ProfileDataValue] | None = _omit_none()


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
    rendered_value: str | None = _omit_none()


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

    model_config = ConfigDict(extra="allow", frozen=True)
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
    language_name: str | None = _omit_none()


# user_group membership (system groups follow role changes) -----------------------------


class UserGroupAddMembers(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add_members"] = "add_members"
    group_id: int
    user_ids: list[int]


class UserGroupRemoveMembers(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["remove_members"] = "remove_members"
    group_id: int
    user_ids: list[int]


# heartbeat and restart (made by the queue layer, not by actions) -----------------------


class Heartbeat(Event):
    type: Literal["heartbeat"] = "heartbeat"


# drafts -------------------------------------------------------------------------------


class DraftPayload(Payload):
    id: int
    type: Literal["", "stream", "private"]
    to: list[int]
    topic: str
    content: str
    timestamp: int


class DraftsAdd(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["add"] = "add"
    drafts: list[DraftPayload]


class DraftsUpdate(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["update"] = "update"
    draft: DraftPayload


class DraftsRemove(Event):
    type: Literal["drafts"] = "drafts"
    op: Literal["remove"] = "remove"
    draft_id: int


# saved_snippets -----------------------------------------------------------------------


class SavedSnippetPayload(Payload):
    id: int
    title: str
    content: str
    date_created: int


class SavedSnippetsAdd(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["add"] = "add"
    saved_snippet: SavedSnippetPayload


class SavedSnippetsUpdate(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["update"] = "update"
    saved_snippet: SavedSnippetPayload


class SavedSnippetsRemove(Event):
    type: Literal["saved_snippets"] = "saved_snippets"
    op: Literal["remove"] = "remove"
    saved_snippet_id: int


# device (client devices and their push registration; never carries the push key) --------


class DeviceAdd(Event):
    type: Literal["device"] = "device"
    op: Literal["add"] = "add"
    device_id: int
    push_key_id: int | None
    push_token_id: str | None
    push_token_last_updated_timestamp: int | None


class DeviceUpdate(Event):
    """The device's whole record after a key or token rotation."""

    type: Literal["device"] = "device"
    op: Literal["update"] = "update"
    device_id: int
    push_key_id: int | None
    push_token_id: str | None
    push_token_last_updated_timestamp: int | None


class DeviceRemove(Event):
    type: Literal["device"] = "device"
    op: Literal["remove"] = "remove"
    device_id: int


# stream, subscription, default_streams, channel_folder ---------------------------------


class GroupSettingObject(Payload):
    direct_members: list[int]
    direct_subgroups: list[int]


GroupSettingPayload = int | GroupSettingObject


class StreamPayload(Payload):
    stream_id: int
    name: str
    is_archived: bool
    description: str
    rendered_description: str
    date_created: int
    creator_id: int | None
    invite_only: bool
    is_web_public: bool
    stream_post_policy: int
    is_announcement_only: bool
    message_retention_days: int | None
    history_public_to_subscribers: bool
    first_message_id: int | None
    folder_id: int | None
    topics_policy: str
    is_recently_active: bool
    stream_weekly_traffic: int | None
    subscriber_count: int
    can_add_subscribers_group: GroupSettingPayload
    can_administer_channel_group: GroupSettingPayload
    can_create_topic_group: GroupSettingPayload
    can_delete_any_message_group: GroupSettingPayload
    can_delete_own_message_group: GroupSettingPayload
    can_move_messages_out_of_channel_group: GroupSettingPayload
    can_move_messages_within_channel_group: GroupSettingPayload
    can_remove_subscribers_group: GroupSettingPayload
    can_resolve_topics_group: GroupSettingPayload
    can_send_message_group: GroupSettingPayload
    can_subscribe_group: GroupSettingPayload


class SubscriptionPayload(StreamPayload):
    color: str
    is_muted: bool
    in_home_view: bool
    pin_to_top: bool
    desktop_notifications: bool | None
    audible_notifications: bool | None
    push_notifications: bool | None
    email_notifications: bool | None
    wildcard_mentions_notify: bool | None
    subscribers: list[int] | None = _omit_none()


class StreamCreate(Event):
    type: Literal["stream"] = "stream"
    op: Literal["create"] = "create"
    streams: list[StreamPayload]


class StreamRef(Payload):
    stream_id: int


class StreamDelete(Event):
    type: Literal["stream"] = "stream"
    op: Literal["delete"] = "delete"
    # Legacy clients read the objects; newer ones the IDs.
    streams: list[StreamRef]
    stream_ids: list[int]
    # Set when the channels were archived, for the queue layer alone: clients with the
    # archived_channels capability get a ``stream`` ``update`` of ``is_archived`` instead
    # (they keep archived channels), the others this event without the marker.
    archived: Literal[True] | None = _omit_none()


class StreamUpdate(Event):
    type: Literal["stream"] = "stream"
    op: Literal["update"] = "update"
    stream_id: int
    name: str
    property: str
    value: GroupSettingPayload | bool | int | str | None
    rendered_description: str | None = _omit_none()
    history_public_to_subscribers: bool | None = _omit_none()
    is_web_public: bool | None = _omit_none()


class SubscriptionAdd(Event):
    type: Literal["subscription"] = "subscription"
    op: Literal["add"] = "add"
    subscriptions: list[SubscriptionPayload]


class SubscriptionRemoved(Payload):
    stream_id: int
    name: str


class SubscriptionRemove(Event):
    type: Literal["subscription"] = "subscription"
    op: Literal["remove"] = "remove"
    subscriptions: list[SubscriptionRemoved]


class SubscriptionUpdate(Event):
    type: Literal["subscription"] = "subscription"
    op: Literal["update"] = "update"
    stream_id: int
    property: str
    value: bool | int | str


class SubscriptionPeerAdd(Event):
    type: Literal["subscription"] = "subscription"
    op: Literal["peer_add"] = "peer_add"
    stream_ids: list[int]
    user_ids: list[int]


class SubscriptionPeerRemove(Event):
    type: Literal["subscription"] = "subscription"
    op: Literal["peer_remove"] = "peer_remove"
    stream_ids: list[int]
    user_ids: list[int]


class DefaultStreams(Event):
    type: Literal["default_streams"] = "default_streams"
    default_streams: list[int]


class ChannelFolderPayload(Payload):
    id: int
    name: str
    description: str
    rendered_description: str
    creator_id: int | None
    date_created: int
    is_archived: bool
    order: int


class ChannelFolderAdd(Event):
    type: Literal["channel_folder"] = "channel_folder"
    op: Literal["add"] = "add"
    channel_folder: ChannelFolderPayload


class ChannelFolderChange(Payload):
    """The properties that changed; the others are absent."""

    name: str | None = _omit_none()
    description: str | None = _omit_none()
    rendered_description: str | None = _omit_none()
    is_archived: bool | None = _omit_none()


class ChannelFolderUpdate(Event):
    type: Literal["channel_folder"] = "channel_folder"
    op: Literal["update"] = "update"
    channel_folder_id: int
    data: ChannelFolderChange


# restart (made by the queue layer when it restores saved queues) ------------------------


class Restart(Event):
    type: Literal["restart"] = "restart"
    zulip_version: str
    zulip_merge_base: str
    zulip_feature_level: int
    server_generation: int


# message, update_message_flags, delete_message ------------------------------------------


class DisplayRecipientUser(Payload):
    id: int
    email: str
    full_name: str
    is_mirror_dummy: bool


class TopicLink(Payload):
    text: str
    url: str


class ReactionPayload(Payload):
    emoji_name: str
    emoji_code: str
    reaction_type: str
    user_id: int


class EditHistoryEntry(Payload):
    user_id: int | None
    timestamp: int
    prev_content: str | None = _omit_none()
    prev_rendered_content: str | None = _omit_none()
    prev_stream: int | None = _omit_none()
    stream: int | None = _omit_none()
    prev_topic: str | None = _omit_none()
    topic: str | None = _omit_none()


class MessagePayload(Payload):
    """A message as clients receive it in a ``message`` event (no ``flags`` inside)."""

    id: int
    sender_id: int
    content: str
    content_type: Literal["text/html", "text/x-markdown"]
    recipient_id: int
    timestamp: int
    client: str
    subject: str
    topic_links: list[TopicLink]
    is_me_message: bool
    reactions: list[ReactionPayload]
    submessages: list[dict[str, Any]]
    sender_full_name: str
    sender_email: str
    sender_realm_str: str
    display_recipient: str | list[DisplayRecipientUser]
    type: Literal["stream", "private"]
    avatar_url: str | None
    stream_id: int | None = _omit_none()
    edit_history: list[EditHistoryEntry] | None = _omit_none()
    last_edit_timestamp: int | None = _omit_none()
    last_moved_timestamp: int | None = _omit_none()


class MessageEventInternal(Payload):
    """What the queue layer needs to tailor a message event per client; never sent on.

    ``content`` of the published event is the rendered HTML; clients registered without
    ``apply_markdown`` get ``raw_content``. ``local_message_id`` is for the queue named
    ``sender_queue_id`` only. Clients with ``client_gravatar`` get a null ``avatar_url``
    when ``avatar_computable``. One event per message is ``broadcast`` to clients of
    ``all_public_streams``, except users listed in ``skip_broadcast_user_ids``, who get
    their own copy (with their own flags) in another event.
    """

    raw_content: str
    sender_queue_id: str | None = None
    avatar_computable: bool = False
    broadcast: bool = False
    skip_broadcast_user_ids: list[int] = Field(default_factory=list)
    # Columns the message object lacks, for queues narrowed with has:link/image/attachment.
    has_link: bool | None = None
    has_image: bool | None = None
    has_attachment: bool | None = None


class MessageEvent(Event):
    """A new message; every recipient user of one event has the same ``flags``."""

    type: Literal["message"] = "message"
    message: MessagePayload
    flags: list[str]
    local_message_id: str | None = _omit_none()
    internal: MessageEventInternal


class UnreadMessageDetails(Payload):
    type: Literal["stream", "private"]
    mentioned: bool | None = _omit_none()
    user_ids: list[int] | None = _omit_none()
    stream_id: int | None = _omit_none()
    topic: str | None = _omit_none()
    unmuted_stream_msg: bool | None = _omit_none()


class UpdateMessageFlagsAdd(Event):
    type: Literal["update_message_flags"] = "update_message_flags"
    op: Literal["add"] = "add"
    # Deprecated name of ``op``, still read by older clients.
    operation: Literal["add"] = "add"
    flag: str
    messages: list[int]
    all: bool = False


class UpdateMessageFlagsRemove(Event):
    type: Literal["update_message_flags"] = "update_message_flags"
    op: Literal["remove"] = "remove"
    operation: Literal["remove"] = "remove"
    flag: str
    messages: list[int]
    all: bool = False
    # Only for the read flag: what clients need to count the messages as unread again.
    message_details: dict[str, UnreadMessageDetails] | None = _omit_none()


class DeleteMessage(Event):
    """Carries both forms: ``message_ids`` (bulk_message_deletion clients) and ``message_id``."""

    type: Literal["delete_message"] = "delete_message"
    message_type: Literal["stream", "private"]
    message_ids: list[int]
    message_id: int | None = _omit_none()
    stream_id: int | None = _omit_none()
    topic: str | None = _omit_none()


# reaction ------------------------------------------------------------------------------------


class ReactionUser(Payload):
    """Deprecated copy of the reacting user; clients should read ``user_id``."""

    user_id: int
    email: str
    full_name: str


class ReactionAdd(Event):
    type: Literal["reaction"] = "reaction"
    op: Literal["add"] = "add"
    message_id: int
    emoji_name: str
    emoji_code: str
    reaction_type: Literal["unicode_emoji", "realm_emoji", "zulip_extra_emoji"]
    user_id: int
    user: ReactionUser


class ReactionRemove(Event):
    type: Literal["reaction"] = "reaction"
    op: Literal["remove"] = "remove"
    message_id: int
    emoji_name: str
    emoji_code: str
    reaction_type: Literal["unicode_emoji", "realm_emoji", "zulip_extra_emoji"]
    user_id: int
    user: ReactionUser


# user_group (creation, edits, deactivation, subgroups) --------------------------------------


class UserGroupPayload(Payload):
    id: int
    name: str
    description: str
    members: list[int]
    direct_subgroup_ids: list[int]
    is_system_group: bool
    creator_id: int | None
    date_created: int | None
    deactivated: bool
    can_add_members_group: GroupSettingPayload
    can_join_group: GroupSettingPayload
    can_leave_group: GroupSettingPayload
    can_manage_group: GroupSettingPayload
    can_mention_group: GroupSettingPayload
    can_remove_members_group: GroupSettingPayload


class UserGroupAdd(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add"] = "add"
    group: UserGroupPayload


class UserGroupChange(Payload):
    """The properties that changed; the others are absent."""

    name: str | None = _omit_none()
    description: str | None = _omit_none()
    deactivated: bool | None = _omit_none()
    can_add_members_group: GroupSettingPayload | None = _omit_none()
    can_join_group: GroupSettingPayload | None = _omit_none()
    can_leave_group: GroupSettingPayload | None = _omit_none()
    can_manage_group: GroupSettingPayload | None = _omit_none()
    can_mention_group: GroupSettingPayload | None = _omit_none()
    can_remove_members_group: GroupSettingPayload | None = _omit_none()


class UserGroupUpdate(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["update"] = "update"
    group_id: int
    data: UserGroupChange
    # Set on edits of a group that is already deactivated, for the queue layer alone: clients
    # without include_deactivated_groups do not know the group, so they must not get the
    # edit. Never delivered (events/tailoring.user_group_event_for_client strips it).
    group_is_deactivated: Literal[True] | None = _omit_none()


class UserGroupRemove(Event):
    """A group was deactivated (clients without include_deactivated_groups drop it)."""

    type: Literal["user_group"] = "user_group"
    op: Literal["remove"] = "remove"
    group_id: int


class UserGroupAddSubgroups(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add_subgroups"] = "add_subgroups"
    group_id: int
    direct_subgroup_ids: list[int]


class UserGroupRemoveSubgroups(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["remove_subgroups"] = "remove_subgroups"
    group_id: int
    direct_subgroup_ids: list[int]


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
    data: dict[str, GroupSettingPayload | bool | int | str | None]


class RealmUserSettingsDefaultsUpdate(Event):
    type: Literal["realm_user_settings_defaults"] = "realm_user_settings_defaults"
    op: Literal["update"] = "update"
    property: str
    value: bool | int | str


# alert_words, muted_users, user_topic, muted_topics ------------------------------------------


class AlertWords(Event):
    type: Literal["alert_words"] = "alert_words"
    alert_words: list[str]


class MutedUserEntry(Payload):
    id: int
    timestamp: int


class MutedUsers(Event):
    type: Literal["muted_users"] = "muted_users"
    muted_users: list[MutedUserEntry]


class UserTopicEvent(Event):
    type: Literal["user_topic"] = "user_topic"
    stream_id: int
    topic_name: str
    last_updated: int
    visibility_policy: int


class MutedTopics(Event):
    """Legacy form of user_topic: the whole list of [channel name, topic, timestamp]."""

    type: Literal["muted_topics"] = "muted_topics"
    muted_topics: list[tuple[str, str, int]]


# update_message, attachment ------------------------------------------------------------------


class UpdateMessage(Event):
    """A content edit and/or a move; topic fields are tailored per client by the queue layer."""

    type: Literal["update_message"] = "update_message"
    user_id: int | None
    edit_timestamp: int
    message_id: int
    message_ids: list[int]
    flags: list[str]
    rendering_only: bool = False
    stream_name: str | None = _omit_none()
    stream_id: int | None = _omit_none()
    new_stream_id: int | None = _omit_none()
    propagate_mode: Literal["change_one", "change_later", "change_all"] | None = _omit_none()
    orig_subject: str | None = _omit_none()
    subject: str | None = _omit_none()
    topic_links: list[TopicLink] | None = _omit_none()
    orig_content: str | None = _omit_none()
    orig_rendered_content: str | None = _omit_none()
    content: str | None = _omit_none()
    rendered_content: str | None = _omit_none()
    is_me_message: bool | None = _omit_none()


class AttachmentPayload(Payload):
    id: int
    name: str
    path_id: str
    size: int
    create_time: int
    message_ids: list[int]


class AttachmentRef(Payload):
    id: int


class AttachmentAdd(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["add"] = "add"
    attachment: AttachmentPayload
    upload_space_used: int


class AttachmentUpdate(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["update"] = "update"
    attachment: AttachmentPayload
    upload_space_used: int


class AttachmentRemove(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["remove"] = "remove"
    attachment: AttachmentRef
    upload_space_used: int


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
    """Every custom emoji of the organization, deactivated ones included."""

    type: Literal["realm_emoji"] = "realm_emoji"
    op: Literal["update"] = "update"
    realm_emoji: dict[str, RealmEmojiPayload]


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
    display_in_profile_summary: bool | None = _omit_none()


class CustomProfileFields(Event):
    """All of the organization's custom profile fields, after any change to one."""

    type: Literal["custom_profile_fields"] = "custom_profile_fields"
    fields: list[CustomProfileFieldPayload]


# typing, typing_edit_message, presence, user_status -----------------------------------------


class TypingUser(Payload):
    user_id: int
    email: str


class _TypingBase(Event):
    """Direct messages name every recipient (the sender among them); channel messages
    name the channel and topic instead.
    """

    type: Literal["typing"] = "typing"
    message_type: Literal["direct", "stream"]
    sender: TypingUser
    recipients: list[TypingUser] | None = _omit_none()
    stream_id: int | None = _omit_none()
    topic: str | None = _omit_none()


class TypingStart(_TypingBase):
    op: Literal["start"] = "start"


class TypingStop(_TypingBase):
    op: Literal["stop"] = "stop"


class TypingEditRecipient(Payload):
    type: Literal["direct", "channel"]
    channel_id: int | None = _omit_none()
    topic: str | None = _omit_none()
    user_ids: list[int] | None = _omit_none()


class _TypingEditMessageBase(Event):
    type: Literal["typing_edit_message"] = "typing_edit_message"
    sender_id: int
    message_id: int
    recipient: TypingEditRecipient


class TypingEditMessageStart(_TypingEditMessageBase):
    op: Literal["start"] = "start"


class TypingEditMessageStop(_TypingEditMessageBase):
    op: Literal["stop"] = "stop"


class LegacyPresenceClient(Payload):
    client: str
    status: Literal["active", "idle"]
    timestamp: int
    pushable: bool


class ModernPresence(Payload):
    active_timestamp: int
    idle_timestamp: int


class PresenceEvent(Event):
    """Published with both the legacy fields and the modern ``presences``; the queue
    layer keeps the shape each client registered for (``lib/presence.py``).
    """

    type: Literal["presence"] = "presence"
    user_id: int | None = _omit_none()
    email: str | None = _omit_none()
    server_timestamp: float | None = _omit_none()
    presence: dict[str, LegacyPresenceClient] | None = _omit_none()
    presences: dict[str, ModernPresence] | None = _omit_none()


class UserStatusEvent(Event):
    """Only the fields the request changed are present."""

    type: Literal["user_status"] = "user_status"
    user_id: int
    away: bool | None = _omit_none()
    status_text: str | None = _omit_none()
    emoji_name: str | None = _omit_none()
    emoji_code: str | None = _omit_none()
    reaction_type: str | None = _omit_none()


# scheduled_messages and reminders -------------------------------------------------------


class ScheduledMessagePayload(Payload):
    scheduled_message_id: int
    type: Literal["stream", "private"]
    # A channel ID for "stream", the other users' IDs for "private".
    to: int | list[int]
    # Only for "stream", as in Zulip.
    topic: str | None = _omit_none()
    content: str
    rendered_content: str
    scheduled_delivery_timestamp: int
    failed: bool


class ScheduledMessagesAdd(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["add"] = "add"
    scheduled_messages: list[ScheduledMessagePayload]


class ScheduledMessagesUpdate(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["update"] = "update"
    scheduled_message: ScheduledMessagePayload


class ScheduledMessagesRemove(Event):
    type: Literal["scheduled_messages"] = "scheduled_messages"
    op: Literal["remove"] = "remove"
    scheduled_message_id: int


class ReminderPayload(Payload):
    reminder_id: int
    type: Literal["private"]
    to: list[int]
    content: str
    rendered_content: str
    scheduled_delivery_timestamp: int
    failed: bool
    reminder_target_message_id: int | None
    # The interface's Reminder record names the message and note directly.
    message_id: int | None
    note: str


class RemindersAdd(Event):
    type: Literal["reminders"] = "reminders"
    op: Literal["add"] = "add"
    reminders: list[ReminderPayload]


class RemindersRemove(Event):
    type: Literal["reminders"] = "reminders"
    op: Literal["remove"] = "remove"
    reminder_id: int


# navigation_view (a user's sidebar views; to the user's own clients) ------------------


class NavigationViewPayload(Payload):
    fragment: str
    is_pinned: bool
    name: str | None


class NavigationViewUpdateData(Payload):
    # Only what changed is sent.
    is_pinned: bool | None = _omit_none()
    name: str | None = _omit_none()


class NavigationViewAdd(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["add"] = "add"
    navigation_view: NavigationViewPayload


class NavigationViewUpdate(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["update"] = "update"
    fragment: str
    data: NavigationViewUpdateData


class NavigationViewRemove(Event):
    type: Literal["navigation_view"] = "navigation_view"
    op: Literal["remove"] = "remove"
    fragment: str


# submessage -------------------------------------------------------------------------------


class SubmessageEvent(Event):
    """Widget data added to a message (a vote, an option, a task)."""

    type: Literal["submessage"] = "submessage"
    msg_type: str
    content: str
    message_id: int
    sender_id: int
    submessage_id: int


# invites ------------------------------------------------------------------------------------


class InvitesChanged(Event):
    """The invitations a user may manage changed; clients refetch GET /invites."""

    type: Literal["invites_changed"] = "invites_changed"


# Reference variants completed by the ref-api work -------------------------------------------


class RealmDeactivated(Event):
    """Sent to every user of a realm as it is deactivated; their queues then close."""

    type: Literal["realm"] = "realm"
    op: Literal["deactivated"] = "deactivated"
    realm_id: int


class RealmBotRemovedBot(Payload):
    user_id: int
    full_name: str


class RealmBotRemove(Event):
    """Deprecated: no longer sent since feature level 222 (``realm_bot`` delete replaced it)."""

    type: Literal["realm_bot"] = "realm_bot"
    op: Literal["remove"] = "remove"
    bot: RealmBotRemovedBot


class DefaultStreamGroupPayload(Payload):
    id: int
    name: str
    description: str
    streams: list[int]


class DefaultStreamGroups(Event):
    type: Literal["default_stream_groups"] = "default_stream_groups"
    default_stream_groups: list[DefaultStreamGroupPayload]


class OnboardingStepPayload(Payload):
    type: Literal["one_time_notice"] = "one_time_notice"
    name: str


class OnboardingSteps(Event):
    type: Literal["onboarding_steps"] = "onboarding_steps"
    onboarding_steps: list[OnboardingStepPayload]


class RealmFilters(Event):
    """Legacy linkifier event, no longer sent since feature level 176 (``realm_linkifiers``)."""

    type: Literal["realm_filters"] = "realm_filters"
    realm_filters: list[list[int | str]]


class UpdateDisplaySettings(Event):
    """Legacy copy of a ``user_settings`` update of a display setting, for clients without
    the ``user_settings_object`` capability."""

    type: Literal["update_display_settings"] = "update_display_settings"
    user: str
    setting_name: str
    setting: bool | int | str
    language_name: str | None = _omit_none()


class UpdateGlobalNotifications(Event):
    """Legacy copy of a ``user_settings`` update of a notification setting."""

    type: Literal["update_global_notifications"] = "update_global_notifications"
    user: str
    notification_name: str
    setting: bool | int | str


class HasZoomToken(Event):
    type: Literal["has_zoom_token"] = "has_zoom_token"
    value: bool


class WebReloadClient(Event):
    """Asks web clients to reload (after a server upgrade); ``immediate`` skips the wait."""

    type: Literal["web_reload_client"] = "web_reload_client"
    immediate: bool


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
