"""The user's navigation views (``navigation_views``), kept current by navigation_view events."""

from __future__ import annotations

from palaver.lib.navigation_views import format_navigation_view, get_navigation_views
from palaver.lib.register import StateContext, StateDict, state_provider


# Zulip fetches this under the plural name, unlike the navigation_view events that update it.
@state_provider("navigation_views")
def navigation_views(ctx: StateContext) -> StateDict:
    return {
        "navigation_views": [
            format_navigation_view(v) for v in get_navigation_views(ctx.session, ctx.user.id)
        ]
    }
