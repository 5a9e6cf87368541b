"""The user's saved snippets (``saved_snippets``), kept current by saved_snippets events."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.saved_snippets import format_saved_snippet, get_saved_snippets


@state_provider("saved_snippets")
def saved_snippets(ctx: StateContext) -> StateDict:
    return {"saved_snippets": [format_saved_snippet(s) for s in get_saved_snippets(ctx.session, ctx.user.id)]}
