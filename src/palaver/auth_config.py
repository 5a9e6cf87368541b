"""The server's sign-in providers: the ``[auth.…]`` tables of the TOML configuration.

``[auth.ldap]`` is one company directory; ``[auth.oidc.NAME]`` is one OpenID Connect
provider (any number); ``[auth.saml.NAME]`` is one SAML 2.0 identity provider (any number);
``[auth.github]``, ``[auth.gitlab]`` and ``[auth.google]`` are the presets, which need only a
client id and secret. Secrets are given inline, by file
(``…_file``, read at start-up) or by environment variable (``…_env``); a secret named but
unreadable is a configuration error, never an empty password.

Which of the configured methods an organization uses is the organization's choice
(``PATCH /realm`` ``authentication_methods``, lib/auth_methods.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

_PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def resolve_secret(values: dict[str, Any], name: str, info: ValidationInfo) -> dict[str, Any]:
    """Fill ``name`` from ``name_file`` or ``name_env`` (one source at most)."""
    file_key, env_key = f"{name}_file", f"{name}_env"
    given = [key for key in (name, file_key, env_key) if values.get(key)]
    if len(given) > 1:
        raise ValueError(f"give only one of {name}, {file_key}, {env_key}")
    if values.get(file_key):
        path = Path(str(values[file_key]))
        try:
            values[name] = path.read_text().strip()
        except OSError as e:
            raise ValueError(f"{file_key} {path} cannot be read: {e.strerror or e}") from None
    elif values.get(env_key):
        env: Mapping[str, str] = (info.context or {}).get("env", os.environ)
        secret = env.get(str(values[env_key]), "")
        if not secret:
            raise ValueError(f"{env_key}: environment variable {values[env_key]} is not set")
        values[name] = secret
    # Resolved once: the settings handed to worker processes (as JSON) carry the value only.
    values.pop(file_key, None)
    values.pop(env_key, None)
    return values


class LdapSettings(BaseModel):
    """A directory checked by bind-and-search: find the entry, then bind as it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # ldap://host:389 (with start_tls for STARTTLS) or ldaps://host:636.
    url: str
    start_tls: bool = False
    # CA certificates to verify the directory's certificate by; the system's when unset.
    ca_file: Path | None = None
    # Verifying the certificate can be turned off for a test directory only.
    tls_verify: bool = True
    # The account searching the directory; empty searches anonymously.
    bind_dn: str = ""
    bind_password: str = ""
    bind_password_file: Path | None = None
    bind_password_env: str = ""
    user_search_base: str
    # The attribute a person types at the login form: mail (their email) or uid, sAMAccountName...
    login_attribute: str = "mail"
    # Extra conditions on the entries that may sign in, e.g. (objectClass=inetOrgPerson).
    user_filter: str = "(objectClass=*)"
    email_attribute: str = "mail"
    name_attribute: str = "cn"
    # An attribute that never changes for an entry (entryUUID on OpenLDAP, objectGUID on AD),
    # so a changed email at the directory updates the Palaver account rather than making one.
    unique_id_attribute: str = "entryUUID"
    # A photo attribute taken as the avatar (jpegPhoto; thumbnailPhoto on Active Directory); empty: none.
    avatar_attribute: str = ""
    # Custom profile fields filled from attributes, by the field's name: {"Phone" = "telephoneNumber"}.
    profile_fields: dict[str, str] = Field(default_factory=dict)
    # Active Directory: an entry whose userAccountControl has ACCOUNTDISABLE (2) set is disabled.
    active_directory: bool = False
    # Elsewhere: an attribute that marks a disabled entry when it holds TRUE, 1 or yes.
    disabled_attribute: str = ""
    timeout_seconds: float = Field(default=10, gt=0, le=120)
    # Each server process brings accounts in line with the directory this often (names,
    # emails, departures: what `palaver sync-ldap` does); 0 leaves it to the command.
    sync_interval_minutes: int = Field(default=60, ge=0, le=10080)

    @model_validator(mode="before")
    @classmethod
    def _secret(cls, values: Any, info: ValidationInfo) -> Any:
        return resolve_secret(dict(values), "bind_password", info) if isinstance(values, dict) else values

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("ldap", "ldaps") or not parts.hostname:
            raise ValueError("must be an ldap:// or ldaps:// URL")
        return value

    @model_validator(mode="after")
    def _check_tls(self) -> LdapSettings:
        if self.start_tls and self.url.startswith("ldaps:"):
            raise ValueError("start_tls is for ldap:// URLs; ldaps:// is TLS already")
        return self

    @property
    def uses_tls(self) -> bool:
        return self.start_tls or self.url.startswith("ldaps:")


OAuthPreset = Literal["oidc", "github", "gitlab", "google"]
ProviderRole = Literal["owner", "administrator", "moderator", "member", "guest"]

# What each preset knows about its provider; OpenID Connect providers give the rest by discovery.
PRESET_DEFAULTS: dict[str, dict[str, str]] = {
    "github": {"display_name": "GitHub"},
    "gitlab": {"display_name": "GitLab", "issuer": "https://gitlab.com"},
    "google": {"display_name": "Google", "issuer": "https://accounts.google.com"},
}


class OAuthProvider(BaseModel):
    """One provider people sign in with by a button (OpenID Connect, or GitHub's OAuth2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    preset: OAuthPreset = "oidc"
    display_name: str = ""
    # The issuer whose /.well-known/openid-configuration describes the provider.
    issuer: str = ""
    client_id: str
    client_secret: str = ""
    client_secret_file: Path | None = None
    client_secret_env: str = ""
    scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    # An icon URL for the button (absolute, or relative to the server).
    icon_url: str | None = None
    # GitHub's endpoints; a GitHub Enterprise server gives its own.
    github_url: str = "https://github.com"
    github_api_url: str = "https://api.github.com"
    # ID tokens issued a little in the future or expired a little ago are still accepted.
    clock_skew_seconds: int = Field(default=120, ge=0, le=600)
    # The claim (ID token or userinfo) listing the person's groups at the provider; empty: unused.
    groups_claim: str = ""
    # Provider group -> Palaver role: each sign-in gives the highest role the person's groups
    # map to, default_role when none does (so the role is never above what the mapping says).
    role_map: dict[str, ProviderRole] = Field(default_factory=dict)
    default_role: ProviderRole = "member"
    # Provider group -> Palaver user group (by name): membership follows at each sign-in.
    group_map: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _secret(cls, values: Any, info: ValidationInfo) -> Any:
        return resolve_secret(dict(values), "client_secret", info) if isinstance(values, dict) else values

    @model_validator(mode="after")
    def _check(self) -> OAuthProvider:
        defaults = PRESET_DEFAULTS.get(self.preset, {})
        for key, value in defaults.items():
            if not getattr(self, key):
                object.__setattr__(self, key, value)
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name or self.preset)
        if (self.role_map or self.group_map) and not self.groups_claim:
            raise ValueError("role_map and group_map need groups_claim (the claim naming the groups)")
        if self.preset == "github":
            if "openid" in self.scopes:
                object.__setattr__(self, "scopes", ["read:user", "user:email"])
        elif not self.issuer:
            raise ValueError("issuer is required (the provider's URL, without /.well-known/...)")
        elif urlsplit(self.issuer).scheme not in ("http", "https"):
            raise ValueError("issuer must be an http:// or https:// URL")
        return self

    @property
    def is_oidc(self) -> bool:
        return self.preset != "github"

    @property
    def zulip_method(self) -> str:
        """The organization-level method this provider belongs to (Zulip's names)."""
        return {"github": "GitHub", "gitlab": "GitLab", "google": "Google"}.get(self.preset, "OpenID Connect")

    @property
    def button_name(self) -> str:
        """``server_settings`` ``external_authentication_methods`` ``name``, as Zulip spells it."""
        return f"oidc:{self.name}" if self.preset == "oidc" else self.preset

    @property
    def path(self) -> str:
        return f"oidc/{self.name}" if self.preset == "oidc" else self.preset


class SamlIdp(BaseModel):
    """One SAML 2.0 identity provider, and the service provider Palaver is towards it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    display_name: str = ""
    # An icon URL for the button (absolute, or relative to the server).
    icon_url: str | None = None
    # The IdP's metadata (entity ID, endpoints, signing certificates): by URL or by file.
    idp_metadata_url: str = ""
    idp_metadata_file: Path | None = None
    # Our entity ID at the IdP; empty: each organization's ``<its URL>/saml/metadata.xml``.
    sp_entity_id: str = ""
    # Our key pair: signs our requests, and the IdP encrypts assertions to the certificate.
    sp_key_file: Path
    sp_cert_file: Path
    # Where the IdP's assertion carries the email, the name and (optionally) the groups.
    email_attribute: str = "email"
    name_attribute: str = "name"
    groups_attribute: str = ""
    # When set, only members of one of these groups (in groups_attribute) may sign in.
    required_groups: list[str] = Field(default_factory=list)
    # As for OpenID Connect: IdP group -> Palaver role (the highest wins, default_role when
    # none maps), and IdP group -> Palaver user group, applied at each sign-in.
    role_map: dict[str, ProviderRole] = Field(default_factory=dict)
    default_role: ProviderRole = "member"
    group_map: dict[str, str] = Field(default_factory=dict)
    # Accept responses no sign-in started here asked for (an IdP's own portal); off, as such
    # responses cannot be bound to the browser that brings them.
    idp_initiated: bool = False
    # Assertions issued a little in the future or expired a little ago are still accepted.
    clock_skew_seconds: int = Field(default=120, ge=0, le=600)

    @model_validator(mode="after")
    def _check(self) -> SamlIdp:
        if bool(self.idp_metadata_url) == (self.idp_metadata_file is not None):
            raise ValueError("give one of idp_metadata_url, idp_metadata_file")
        if self.idp_metadata_url and urlsplit(self.idp_metadata_url).scheme not in ("http", "https"):
            raise ValueError("idp_metadata_url must be an http:// or https:// URL")
        files = [self.sp_key_file, self.sp_cert_file, self.idp_metadata_file]
        for path in (p for p in files if p is not None):
            if not path.is_file():
                raise ValueError(f"{path} cannot be read")
        if (self.required_groups or self.role_map or self.group_map) and not self.groups_attribute:
            raise ValueError("required_groups, role_map and group_map need groups_attribute")
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name or "SAML")
        return self

    @property
    def zulip_method(self) -> str:
        return "SAML"

    @property
    def button_name(self) -> str:
        """``server_settings`` ``external_authentication_methods`` ``name``, as Zulip spells it."""
        return f"saml:{self.name}"

    @property
    def path(self) -> str:
        return f"saml/{self.name}"


class AuthSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ldap: LdapSettings | None = None
    oidc: dict[str, OAuthProvider] = Field(default_factory=dict)
    saml: dict[str, SamlIdp] = Field(default_factory=dict)
    github: OAuthProvider | None = None
    gitlab: OAuthProvider | None = None
    google: OAuthProvider | None = None

    @model_validator(mode="before")
    @classmethod
    def _name_providers(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        oidc = values.get("oidc") or {}
        if not isinstance(oidc, dict):
            raise ValueError("[auth.oidc] must hold one table per provider: [auth.oidc.NAME]")
        named: dict[str, Any] = {}
        for name, table in oidc.items():
            if not _PROVIDER_NAME.match(name):
                raise ValueError(f"provider name {name!r}: use lowercase letters, digits, - and _")
            named[name] = {**table, "name": name, "preset": "oidc"} if isinstance(table, dict) else table
        values["oidc"] = named
        saml = values.get("saml") or {}
        if not isinstance(saml, dict):
            raise ValueError("[auth.saml] must hold one table per identity provider: [auth.saml.NAME]")
        for name in saml:
            if not _PROVIDER_NAME.match(name):
                raise ValueError(f"provider name {name!r}: use lowercase letters, digits, - and _")
        values["saml"] = {n: {**t, "name": n} if isinstance(t, dict) else t for n, t in saml.items()}
        for preset in ("github", "gitlab", "google"):
            table = values.get(preset)
            if isinstance(table, dict):
                values[preset] = {**table, "name": preset, "preset": preset}
        return values

    def providers(self) -> list[OAuthProvider]:
        """Every button, in display order: the OpenID Connect providers, then the presets."""
        presets = [p for p in (self.github, self.gitlab, self.google) if p is not None]
        return [*self.oidc.values(), *presets]

    def provider(self, path: str) -> OAuthProvider | None:
        return next((p for p in self.providers() if p.path == path), None)

    def buttons(self) -> list[OAuthProvider | SamlIdp]:
        """Every "Sign in with …" button, in display order: SAML's after the others."""
        return [*self.providers(), *self.saml.values()]
