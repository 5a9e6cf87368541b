"""GET /server_settings: what a client learns before it logs in."""

from __future__ import annotations

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.auth_methods import (
    EMAIL,
    external_authentication_methods,
    method_enabled,
    server_authentication_flags,
    usernames_are_emails,
)
from palaver.lib.channels import realm_streams
from palaver.lib.markdown.render import render_markdown
from palaver.lib.realm import get_realm, realm_url
from palaver.lib.realm_images import realm_icon_url
from palaver.models import Realm

router = ApiRouter()


def _web_public_access_enabled(ctx: Ctx, realm: Realm) -> bool:
    """Whether a login page should offer browsing without an account."""
    if not realm.enable_spectator_access:
        return False
    return any(s.is_web_public for s in realm_streams(ctx.session, realm.id, include_archived=False))


@router.get("/server_settings", auth="none")
def get_server_settings(ctx: Ctx) -> JsonDict:
    settings = ctx.services.settings
    realm = None if ctx.realm_id_or_none is None else get_realm(ctx.session, ctx.realm_id_or_none)
    result: JsonDict = {
        "authentication_methods": server_authentication_flags(settings, realm),
        "external_authentication_methods": external_authentication_methods(settings, realm),
        "service_feature_level": FEATURE_LEVEL,
        "service_version": SERVICE_VERSION,
        "service_merge_base": "",
        # Existing clients (the python `zulip` package among them) require these names.
        "zulip_feature_level": FEATURE_LEVEL,
        "zulip_version": SERVICE_VERSION,
        "zulip_merge_base": "",
        "push_notifications_enabled": settings.push_configured,
        "is_incompatible": False,
        "email_auth_enabled": realm is None or method_enabled(settings, realm, EMAIL),
        "require_email_format_usernames": usernames_are_emails(settings, realm),
    }
    if realm is not None:
        url = realm_url(settings, realm)
        result.update(
            realm_url=url,
            realm_uri=url,
            realm_name=realm.name,
            realm_icon=realm_icon_url(settings, realm),
            realm_description=render_markdown(realm.description),
            realm_web_public_access_enabled=_web_public_access_enabled(ctx, realm),
        )
    return result
