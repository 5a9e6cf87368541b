"""A company directory over LDAP (ldap3): bind-and-search sign-in and the list of its people.

Sign-in finds the person's entry (as the configured search account, or anonymously) by the
attribute they type at the login form, then binds as that entry with the password they
gave: the directory, never Palaver, judges the password. Connections use LDAPS or STARTTLS
when configured, verifying the directory's certificate.
"""

from __future__ import annotations

import math
import ssl
from dataclasses import dataclass
from typing import Any

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars

from palaver.auth_config import LdapSettings
from palaver.lib.exceptions import JsonableError
from palaver.lib.external_auth import ExternalAccount

PROVIDER = "ldap"


class DirectoryUnavailableError(JsonableError):
    code = "DIRECTORY_UNAVAILABLE"
    http_status = 503

    def __init__(self) -> None:
        super().__init__("The company directory cannot be reached right now. Please try again later.")


@dataclass(frozen=True)
class DirectoryEntry:
    dn: str
    account: ExternalAccount


def _server(config: LdapSettings) -> ldap3.Server:
    tls = None
    if config.uses_tls:
        tls = ldap3.Tls(
            validate=ssl.CERT_REQUIRED if config.tls_verify else ssl.CERT_NONE,
            ca_certs_file=str(config.ca_file) if config.ca_file else None,
            version=ssl.PROTOCOL_TLS_CLIENT,
        )
    return ldap3.Server(
        config.url,
        use_ssl=config.url.startswith("ldaps:"),
        tls=tls,
        connect_timeout=math.ceil(config.timeout_seconds),
        get_info=ldap3.NONE,
    )


def _connect(config: LdapSettings, user: str | None, password: str | None) -> ldap3.Connection | None:
    """A bound connection, or None when the directory refused the credentials.

    Raises DirectoryUnavailableError when the directory cannot be talked to at all, so a
    broken directory reads as an outage and not as a wrong password.
    """
    connection = ldap3.Connection(
        _server(config),
        user=user,
        password=password,
        auto_bind=ldap3.AUTO_BIND_NONE,
        receive_timeout=math.ceil(config.timeout_seconds),  # a socket option: whole seconds
        raise_exceptions=False,
        read_only=True,
    )
    try:
        connection.open()
        if config.start_tls and not connection.start_tls():
            raise DirectoryUnavailableError()
        if connection.bind():
            return connection
    except LDAPException:
        raise DirectoryUnavailableError() from None
    result = connection.result or {}
    connection.unbind()
    if result.get("result") in (49, 48, 53):  # invalidCredentials, inappropriateAuth, unwillingToPerform
        return None
    raise DirectoryUnavailableError()


def _service_connection(config: LdapSettings) -> ldap3.Connection:
    connection = _connect(config, config.bind_dn or None, config.bind_password or None)
    if connection is None:
        # The search account's own password was refused: a configuration fault, an outage to users.
        raise DirectoryUnavailableError()
    return connection


def _values(attributes: dict[str, Any], name: str) -> list[Any]:
    for key, value in attributes.items():
        if key.lower() == name.lower():
            return list(value) if isinstance(value, list) else [value]
    return []


def _first(attributes: dict[str, Any], name: str) -> str:
    values = _values(attributes, name)
    first = values[0] if values else None
    if isinstance(first, bytes):
        first = first.decode("utf-8", "replace")
    return str(first).strip() if first is not None else ""


# userAccountControl's ACCOUNTDISABLE flag (Active Directory).
_ACCOUNTDISABLE = 2
_TRUE = {"true", "1", "yes"}


def _is_disabled(config: LdapSettings, values: dict[str, Any]) -> bool:
    if config.active_directory:
        control = _first(values, "userAccountControl")
        if control.lstrip("-").isdigit() and int(control) & _ACCOUNTDISABLE:
            return True
    return bool(config.disabled_attribute) and _first(values, config.disabled_attribute).lower() in _TRUE


def _attribute_names(config: LdapSettings) -> list[str]:
    names = {
        config.email_attribute,
        config.name_attribute,
        config.unique_id_attribute,
        config.login_attribute,
    }
    names.update(config.profile_fields.values())
    if config.avatar_attribute:
        names.add(config.avatar_attribute)
    if config.active_directory:
        names.add("userAccountControl")
    if config.disabled_attribute:
        names.add(config.disabled_attribute)
    return sorted(names)


def _account(
    config: LdapSettings, dn: str, values: dict[str, Any], raw: dict[str, Any]
) -> ExternalAccount | None:
    email = _first(values, config.email_attribute).lower()
    if not email:
        return None
    photo = _values(raw, config.avatar_attribute) if config.avatar_attribute else []
    profile = tuple((name, _first(values, attribute)) for name, attribute in config.profile_fields.items())
    return ExternalAccount(
        PROVIDER,
        _first(values, config.unique_id_attribute) or dn,
        email,
        _first(values, config.name_attribute),
        avatar=photo[0] if photo and isinstance(photo[0], bytes) and photo[0] else None,
        profile=profile,
        disabled=_is_disabled(config, values),
    )


def _entries(connection: ldap3.Connection, config: LdapSettings, condition: str) -> list[DirectoryEntry]:
    found = connection.extend.standard.paged_search(
        config.user_search_base,
        f"(&{config.user_filter}{condition})",
        search_scope=ldap3.SUBTREE,
        attributes=_attribute_names(config),
        paged_size=500,
        generator=False,
    )
    result = connection.result or {}
    if result.get("result") not in (0, None):
        raise DirectoryUnavailableError()
    entries: list[DirectoryEntry] = []
    for item in found or []:
        if item.get("type") != "searchResEntry":
            continue
        dn = str(item["dn"])
        account = _account(config, dn, item.get("attributes") or {}, item.get("raw_attributes") or {})
        if account is not None:
            entries.append(DirectoryEntry(dn, account))
    return entries


def authenticate(config: LdapSettings, login: str, password: str) -> ExternalAccount | None:
    """The person whose entry ``login`` names, if ``password`` is theirs; else None.

    A disabled entry's account comes back marked ``disabled`` once the password is shown
    right, so only its owner learns that it is disabled.
    """
    # An empty password would be an unauthenticated bind, which directories accept as anyone.
    if not login or not password:
        return None
    connection = _service_connection(config)
    try:
        condition = f"({config.login_attribute}={escape_filter_chars(login)})"
        entries = _entries(connection, config, condition)
    finally:
        connection.unbind()
    if len(entries) != 1:
        return None
    entry = entries[0]
    bound = _connect(config, entry.dn, password)
    if bound is None:
        return None
    bound.unbind()
    return entry.account


def all_people(config: LdapSettings) -> list[ExternalAccount]:
    """Every entry with an email (disabled ones too, marked so), for ``palaver sync-ldap``."""
    connection = _service_connection(config)
    try:
        return [e.account for e in _entries(connection, config, f"({config.email_attribute}=*)")]
    finally:
        connection.unbind()
