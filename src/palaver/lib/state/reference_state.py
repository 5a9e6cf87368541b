"""/register state for default channel groups, onboarding steps and legacy linkifiers."""

from __future__ import annotations

from palaver.lib.default_stream_groups import format_default_stream_groups
from palaver.lib.onboarding_steps import pending_onboarding_steps
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("default_stream_groups")
def default_stream_groups(ctx: StateContext) -> StateDict:
    return {"realm_default_stream_groups": format_default_stream_groups(ctx.session, ctx.user.realm_id)}


@state_provider("onboarding_steps")
def onboarding_steps(ctx: StateContext) -> StateDict:
    # No tour video is hosted by this server, which turns the video step off in clients.
    return {
        "onboarding_steps": pending_onboarding_steps(ctx.session, ctx.user.id),
        "navigation_tour_video_url": None,
    }


@state_provider("realm_filters")
def realm_filters(ctx: StateContext) -> StateDict:
    # Since feature level 176 this legacy key is always empty (clients read realm_linkifiers);
    # it is kept so old clients that ask for it find it.
    return {"realm_filters": []}


@state_provider("video_calls")
def video_calls(ctx: StateContext) -> StateDict:
    # Zoom accounts cannot be linked on this server (it makes no outgoing OAuth calls).
    return {"has_zoom_token": False}
