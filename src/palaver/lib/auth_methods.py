"""Which sign-in methods an organization offers: the server's configured providers
(``[auth.…]``, auth_config.py), less those its administrators turned off.

Methods carry Zulip's names ("Email", "LDAP", "OpenID Connect", "GitHub"...), which clients
show in the organization's settings (``realm_authentication_methods``) and send back in
``PATCH /realm`` ``authentication_methods``.
"""

from __future__ import annotations

from typing import Any

from palaver.auth_config import OAuthProvider, SamlIdp
from palaver.config import Settings
from palaver.lib.exceptions import JsonableError
from palaver.models import Realm

EMAIL = "Email"
LDAP = "LDAP"
OPENID_CONNECT = "OpenID Connect"
SAML = "SAML"
# Every method Palaver implements, in the order the settings panel lists them.
ALL_METHODS = (EMAIL, LDAP, OPENID_CONNECT, SAML, "GitHub", "GitLab", "Google")
# ``server_settings`` ``authentication_methods`` keys, by method.
SERVER_SETTINGS_KEYS = {
    EMAIL: ("password", "email"),
    LDAP: ("ldap",),
    OPENID_CONNECT: ("openid connect",),
    SAML: ("saml",),
    "GitHub": ("github",),
    "GitLab": ("gitlab",),
    "Google": ("google",),
}
NOT_CONFIGURED = "This method is not configured on this server."


def available_methods(settings: Settings) -> set[str]:
    """The methods this server is configured for."""
    methods = {EMAIL}
    if settings.auth.ldap is not None:
        methods.add(LDAP)
    methods.update(p.zulip_method for p in settings.auth.buttons())
    return methods


def disabled_methods(realm: Realm) -> set[str]:
    return {m for m in realm.disabled_authentication_methods.split(",") if m}


def enabled_methods(settings: Settings, realm: Realm) -> set[str]:
    return available_methods(settings) - disabled_methods(realm)


def method_enabled(settings: Settings, realm: Realm, method: str) -> bool:
    return method in enabled_methods(settings, realm)


def realm_authentication_methods(settings: Settings, realm: Realm) -> dict[str, dict[str, Any]]:
    """``realm_authentication_methods`` (/register) and its ``update_dict`` event's value."""
    available = available_methods(settings)
    disabled = disabled_methods(realm)
    result: dict[str, dict[str, Any]] = {}
    for method in ALL_METHODS:
        entry: dict[str, Any] = {"enabled": method in available and method not in disabled}
        entry["available"] = method in available
        if method not in available:
            entry["unavailable_reason"] = NOT_CONFIGURED
        result[method] = entry
    return result


def check_authentication_methods(settings: Settings, realm: Realm, value: object) -> str:
    """The stored form of a ``PATCH /realm`` ``authentication_methods`` value ({name: bool}).

    Methods not named keep their state; at least one method must stay on, or nobody could
    sign in again.
    """
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise JsonableError("Invalid authentication_methods")
    available = available_methods(settings)
    disabled = disabled_methods(realm)
    for name, on in value.items():
        if name not in ALL_METHODS:
            raise JsonableError(f"Invalid authentication method: {name}")
        if on and name not in available:
            raise JsonableError(f"Authentication method {name} is not available on this server.")
        if on:
            disabled.discard(name)
        else:
            disabled.add(name)
    if not available - disabled:
        raise JsonableError("At least one authentication method must be enabled.")
    return ",".join(m for m in ALL_METHODS if m in disabled)


def enabled_providers(settings: Settings, realm: Realm | None) -> list[OAuthProvider | SamlIdp]:
    """The "Sign in with …" buttons of an organization (all configured ones without one)."""
    providers = settings.auth.buttons()
    if realm is None:
        return providers
    enabled = enabled_methods(settings, realm)
    return [p for p in providers if p.zulip_method in enabled]


def external_authentication_methods(settings: Settings, realm: Realm | None) -> list[dict[str, Any]]:
    """``server_settings`` ``external_authentication_methods``: one entry per button."""
    return [
        {
            "name": p.button_name,
            "display_name": p.display_name,
            "display_icon": p.icon_url,
            "login_url": f"/accounts/login/social/{p.path}",
            "signup_url": f"/accounts/register/social/{p.path}",
        }
        for p in enabled_providers(settings, realm)
    ]


def server_authentication_flags(settings: Settings, realm: Realm | None) -> dict[str, bool]:
    """``server_settings`` ``authentication_methods``: the deprecated flags, now real."""
    enabled = available_methods(settings) if realm is None else enabled_methods(settings, realm)
    keys = ("password", "dev", "email", "ldap", "remoteuser", "github", "azuread", "gitlab", "apple")
    flags = {key: False for key in (*keys, "google", "saml", "openid connect", "discord")}
    for method in enabled:
        for key in SERVER_SETTINGS_KEYS[method]:
            flags[key] = True
    if settings.development_auth:
        flags["dev"] = True
    return flags


def usernames_are_emails(settings: Settings, realm: Realm | None) -> bool:
    """Whether the login form asks for an email (``require_email_format_usernames``): not
    when the directory is searched by another attribute (uid, sAMAccountName)."""
    ldap = settings.auth.ldap
    if ldap is None or (realm is not None and not method_enabled(settings, realm, LDAP)):
        return True
    return ldap.login_attribute.lower() == "mail"
