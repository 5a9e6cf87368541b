"""The user's client devices (``devices``), kept current by device events."""

from __future__ import annotations

from palaver.lib.devices import format_device, get_devices
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("device")
def devices(ctx: StateContext) -> StateDict:
    # Keyed by device ID, as clients look their own device up by the ID they were given.
    records = (format_device(d) for d in get_devices(ctx.session, ctx.user.id))
    return {"devices": {str(r.pop("device_id")): r for r in records}}
