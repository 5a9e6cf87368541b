"""The realm-state cache: per-process, immutable snapshots of what hot paths read per request,
kept coherent across processes.

- ``reads``: the public API readers use (``realm_users``, ``realm_channels``, ...).
- ``components``, ``snapshots``: what is cached, and how each component is loaded.
- ``table_map``: which written tables (and columns) drop which component.
- ``store``: the per-process LRU of realms, race-free against concurrent invalidations.
- ``writes``: what each write transaction wrote, recorded on the engine.
- ``transport``, ``change_log``: how an invalidation reaches the other processes.
- ``credentials``: whether what authenticated an API key is still current (known credentials).
- ``realm_cache``: ``RealmCache``, one process's cache, which ``Database`` holds.
"""

from __future__ import annotations

from palaver.cache.components import Loaded
from palaver.cache.reads import (
    active_subscriber_ids,
    active_users,
    cached_channel,
    cached_channel_by_name,
    cached_component,
    cached_user,
    cached_users,
    group_member_ids,
    known_system_group_id,
    realm_alert_words,
    realm_channels,
    realm_emoji,
    realm_groups,
    realm_linkifiers,
    realm_settings,
    realm_users,
    subscribed_channel_ids,
    user_group_ids,
    user_realm_id,
    users_muting,
)
from palaver.cache.snapshots import (
    ActiveUsers,
    AlertWords,
    CachedEmoji,
    CachedGroup,
    CachedLinkifier,
    CachedUser,
    ChannelFacts,
    RealmChannels,
    RealmGroups,
    RealmRow,
    RealmUsers,
    StreamInfo,
)
from palaver.cache.table_map import columns

__all__ = [
    "ActiveUsers",
    "AlertWords",
    "CachedEmoji",
    "CachedGroup",
    "CachedLinkifier",
    "CachedUser",
    "ChannelFacts",
    "Loaded",
    "RealmChannels",
    "RealmGroups",
    "RealmRow",
    "RealmUsers",
    "StreamInfo",
    "active_subscriber_ids",
    "active_users",
    "cached_channel",
    "cached_channel_by_name",
    "cached_component",
    "cached_user",
    "cached_users",
    "columns",
    "group_member_ids",
    "known_system_group_id",
    "realm_alert_words",
    "realm_channels",
    "realm_emoji",
    "realm_groups",
    "realm_linkifiers",
    "realm_settings",
    "realm_users",
    "subscribed_channel_ids",
    "user_group_ids",
    "user_realm_id",
    "users_muting",
]
