"""Events about channels: stream, subscription, default_streams, default_stream_groups, channel_folder."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none
from palaver.events.types.user_groups import GroupSettingPayload

# stream, subscription, default_streams, channel_folder ---------------------------------


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
    subscribers: list[int] | None = omit_none()


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
    archived: Literal[True] | None = omit_none()


class StreamUpdate(Event):
    type: Literal["stream"] = "stream"
    op: Literal["update"] = "update"
    stream_id: int
    name: str
    property: str
    value: GroupSettingPayload | bool | int | str | None
    rendered_description: str | None = omit_none()
    history_public_to_subscribers: bool | None = omit_none()
    is_web_public: bool | None = omit_none()


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

    name: str | None = omit_none()
    description: str | None = omit_none()
    rendered_description: str | None = omit_none()
    is_archived: bool | None = omit_none()


class ChannelFolderUpdate(Event):
    type: Literal["channel_folder"] = "channel_folder"
    op: Literal["update"] = "update"
    channel_folder_id: int
    data: ChannelFolderChange


class ChannelFolderReorder(Event):
    """Every folder of the organization (archived ones included), in their new order."""

    type: Literal["channel_folder"] = "channel_folder"
    op: Literal["reorder"] = "reorder"
    order: list[int]


class DefaultStreamGroupPayload(Payload):
    id: int
    name: str
    description: str
    streams: list[int]


class DefaultStreamGroups(Event):
    type: Literal["default_stream_groups"] = "default_stream_groups"
    default_stream_groups: list[DefaultStreamGroupPayload]
