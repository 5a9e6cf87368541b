"""The user's drafts (``drafts``), kept current by drafts events."""

from __future__ import annotations

from palaver.lib.drafts import format_draft, get_drafts
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("drafts")
def drafts(ctx: StateContext) -> StateDict:
    # With synchronization off the server keeps no drafts, and clients must not expect any.
    if not ctx.user.enable_drafts_synchronization:
        return {"drafts": []}
    return {"drafts": [format_draft(d) for d in get_drafts(ctx.session, ctx.user.id)]}
