"""Organization-wide objects administrators configure: code playgrounds, allowed domains,
custom emoji and linkifiers."""

from __future__ import annotations

from palaver.lib.linkifiers import format_linkifier, get_linkifiers
from palaver.lib.playgrounds import format_playground, get_playgrounds
from palaver.lib.realm_domains import format_realm_domain, get_realm_domains
from palaver.lib.realm_emoji import realm_emoji_dict
from palaver.lib.register import StateContext, StateDict, state_provider


@state_provider("realm_playgrounds")
def realm_playgrounds(ctx: StateContext) -> StateDict:
    return {"realm_playgrounds": [format_playground(p) for p in get_playgrounds(ctx.session, ctx.realm.id)]}


@state_provider("realm_domains")
def realm_domains(ctx: StateContext) -> StateDict:
    return {"realm_domains": [format_realm_domain(d) for d in get_realm_domains(ctx.session, ctx.realm.id)]}


@state_provider("realm_emoji")
def realm_emoji(ctx: StateContext) -> StateDict:
    return {"realm_emoji": realm_emoji_dict(ctx.session, ctx.realm.id)}


@state_provider("realm_linkifiers")
def realm_linkifiers(ctx: StateContext) -> StateDict:
    return {"realm_linkifiers": [format_linkifier(f) for f in get_linkifiers(ctx.session, ctx.realm.id)]}
