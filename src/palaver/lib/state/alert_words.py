"""The user's alert words (``alert_words``)."""

from __future__ import annotations

from palaver.lib.alert_words import user_alert_words
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("alert_words")
def alert_words(ctx: StateContext) -> StateDict:
    return {"alert_words": user_alert_words(ctx.session, ctx.user.id)}
