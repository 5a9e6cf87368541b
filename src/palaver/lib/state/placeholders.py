"""PLACEHOLDERS: empty but well-formed /register state for features not built yet.

Clients (zulip-terminal above all) read these keys unconditionally, so they must exist
with the right shape before the features do. Each is registered with
``placeholder=True``: when a feature adds a real ``@state_provider`` for the same event
type in its own module, that provider is used and the placeholder here is skipped.
Delete an entry once its feature is in.
"""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("default_stream_groups", placeholder=True)
def default_stream_groups(ctx: StateContext) -> StateDict:
    return {"realm_default_stream_groups": []}


@state_provider("realm_filters", placeholder=True)
def realm_filters(ctx: StateContext) -> StateDict:
    # Legacy linkifier format; always empty, even on servers with linkifiers.
    return {"realm_filters": []}


@state_provider("onboarding_steps", placeholder=True)
def onboarding_steps(ctx: StateContext) -> StateDict:
    return {"onboarding_steps": [], "navigation_tour_video_url": None}


@state_provider("video_calls", placeholder=True)
def video_calls(ctx: StateContext) -> StateDict:
    return {"has_zoom_token": False}
