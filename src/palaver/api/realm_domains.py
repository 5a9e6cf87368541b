"""Allowed email domains: anyone may list them; only owners change them."""

from __future__ import annotations

from palaver.actions.realm_domains import do_add_realm_domain, do_change_realm_domain, do_remove_realm_domain
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.realm_domains import format_realm_domain, get_realm_domains

router = ApiRouter()


@router.get("/realm/domains")
def list_realm_domains(ctx: Ctx) -> JsonDict:
    return {
        "domains": [format_realm_domain(d) for d in get_realm_domains(ctx.session, ctx.requester.realm_id)]
    }


@router.post("/realm/domains")
def add_realm_domain(ctx: Ctx, domain: str, allow_subdomains: bool) -> JsonDict:
    realm_domain = do_add_realm_domain(ctx.session, ctx.requester, domain, allow_subdomains=allow_subdomains)
    return {"new_domain": [realm_domain.id, realm_domain.domain]}


@router.patch("/realm/domains/{domain}")
def change_realm_domain(ctx: Ctx, domain: str, allow_subdomains: bool) -> JsonDict:
    do_change_realm_domain(ctx.session, ctx.requester, domain, allow_subdomains=allow_subdomains)
    return {}


@router.delete("/realm/domains/{domain}")
def remove_realm_domain(ctx: Ctx, domain: str) -> JsonDict:
    do_remove_realm_domain(ctx.session, ctx.requester, domain)
    return {}
