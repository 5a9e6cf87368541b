"""The user's alert words: list, add, remove."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from palaver.actions.alert_words import do_add_alert_words, do_remove_alert_words
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.alert_words import user_alert_words
from palaver.models.alert_words import MAX_ALERT_WORD_LENGTH

router = ApiRouter()

AlertWordList = list[Annotated[str, StringConstraints(max_length=MAX_ALERT_WORD_LENGTH)]]


@router.get("/users/me/alert_words")
def list_alert_words(ctx: Ctx) -> JsonDict:
    return {"alert_words": user_alert_words(ctx.session, ctx.requester.user_id)}


@router.post("/users/me/alert_words")
def add_alert_words(ctx: Ctx, alert_words: AlertWordList) -> JsonDict:
    return {"alert_words": do_add_alert_words(ctx.session, ctx.requester, alert_words)}


@router.delete("/users/me/alert_words")
def remove_alert_words(ctx: Ctx, alert_words: list[str]) -> JsonDict:
    return {"alert_words": do_remove_alert_words(ctx.session, ctx.requester, alert_words)}
