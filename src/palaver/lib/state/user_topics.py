"""Topic visibility policies (``user_topics``) and their legacy form (``muted_topics``)."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_topics import muted_topics_list, user_topics_list


def _allow_empty_topic_name(ctx: StateContext) -> bool:
    return ctx.client.has_capability("empty_topic_name")


@state_provider("user_topic")
def user_topics(ctx: StateContext) -> StateDict:
    return {
        "user_topics": user_topics_list(
            ctx.session, ctx.user.id, allow_empty_topic_name=_allow_empty_topic_name(ctx)
        )
    }


@state_provider("muted_topics")
def muted_topics(ctx: StateContext) -> StateDict:
    # A client asking for user_topic by name has no use for the legacy list.
    if ctx.asked_for("user_topic"):
        return {}
    muted = muted_topics_list(ctx.session, ctx.user.id, allow_empty_topic_name=_allow_empty_topic_name(ctx))
    return {"muted_topics": muted}
