"""Events about a client's own queue and devices: heartbeat, restart, device, web_reload_client."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event

# heartbeat and restart (made by the queue layer, not by actions) -----------------------


class Heartbeat(Event):
    type: Literal["heartbeat"] = "heartbeat"


# device (client devices and their push registration; never carries the push key) --------


class DeviceAdd(Event):
    type: Literal["device"] = "device"
    op: Literal["add"] = "add"
    device_id: int
    push_key_id: int | None
    push_token_id: str | None
    push_token_last_updated_timestamp: int | None
    # A token the push service has not accepted yet, and its refusal's error code.
    pending_push_token_id: str | None = None
    push_registration_error_code: str | None = None


class DeviceUpdate(Event):
    """The device's whole record after a key or token rotation."""

    type: Literal["device"] = "device"
    op: Literal["update"] = "update"
    device_id: int
    push_key_id: int | None
    push_token_id: str | None
    push_token_last_updated_timestamp: int | None
    pending_push_token_id: str | None = None
    push_registration_error_code: str | None = None


class DeviceRemove(Event):
    type: Literal["device"] = "device"
    op: Literal["remove"] = "remove"
    device_id: int


# restart (made by the queue layer when it restores saved queues) ------------------------


class Restart(Event):
    type: Literal["restart"] = "restart"
    zulip_version: str
    zulip_merge_base: str
    zulip_feature_level: int
    server_generation: int


class WebReloadClient(Event):
    """Asks web clients to reload (after a server upgrade); ``immediate`` skips the wait."""

    type: Literal["web_reload_client"] = "web_reload_client"
    immediate: bool
