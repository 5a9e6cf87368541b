"""Palaver as a SAML 2.0 service provider (pysaml2, with Debian's ``xmlsec1`` for the XML
signatures and encryption): the requests it sends and the answers it accepts.

Each organization is its own service provider, on its own host: its metadata at
``<realm URL>/saml/metadata.xml``, assertions posted to ``<realm URL>/complete/saml/``. An
answer counts only when its assertion is signed by a key of the IdP's metadata (the whole
response signed is not enough for pysaml2, nor for us), decrypts with our key when it is
encrypted, names us as its audience, is within its validity window (``clock_skew_seconds``
either way), and answers a request we sent (``InResponseTo``), unless IdP-initiated sign-in
is on. Requests are signed with our key. Replays and the browser binding are the caller's
(actions/saml.py, web/saml.py): they need the database and the cookie.
"""

from __future__ import annotations

import base64
import binascii
import shutil
import threading
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from palaver.auth_config import SamlIdp
from palaver.lib.exceptions import JsonableError
from palaver.lib.external_auth import ExternalAccount

if TYPE_CHECKING:
    from saml2.client import Saml2Client
    from saml2.config import SPConfig

# pysaml2 (with requests, pyOpenSSL and xmlschema, tens of MB) is imported inside the
# functions that talk SAML, so a server without [auth.saml.*] never loads it. Its URIs are
# spelled here; tests/test_startup_imports.py checks them against pysaml2's.
BINDING_HTTP_POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
BINDING_HTTP_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
SIG_RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"

PROTOCOL = "{urn:oasis:names:tc:SAML:2.0:protocol}"
ASSERTION = "{urn:oasis:names:tc:SAML:2.0:assertion}"
# A remote IdP's metadata is fetched again after this long.
METADATA_TTL_SECONDS = 3600
# An assertion without an end to its validity is remembered (against replays) this long.
DEFAULT_REPLAY_WINDOW = timedelta(hours=1)
ACS_PATH = "/complete/saml/"
METADATA_PATH = "/saml/metadata.xml"


class SamlRefusedError(JsonableError):
    """The IdP's answer does not prove who is signing in; the message is for the page."""

    code = "SSO_REFUSED"
    http_status = 403


def xmlsec_binary() -> str:
    path = shutil.which("xmlsec1")
    if path is None:
        raise SamlRefusedError("SAML sign-in needs xmlsec1 on the server (Debian: apt-get install xmlsec1).")
    return path


@dataclass(frozen=True)
class SamlMessage:
    """What an IdP's message says of itself before any check: enough to pick the IdP."""

    kind: str  # "Response", "LogoutResponse", "LogoutRequest"
    issuer: str
    in_response_to: str


@dataclass(frozen=True)
class SamlSignIn:
    account: ExternalAccount
    # "<issuer> <assertion ID>": the key of the replay check, until ``expires``.
    assertion_key: str
    expires: datetime
    name_id_xml: str
    session_index: str


def sp_entity_id(idp: SamlIdp, realm_url: str) -> str:
    return idp.sp_entity_id or realm_url + METADATA_PATH


def _config(idp: SamlIdp, realm_url: str, *, with_idp: bool = True) -> SPConfig:
    from saml2.config import SPConfig  # noqa: PLC0415

    acs = realm_url + ACS_PATH
    metadata: dict[str, Any] = {}
    if not with_idp:
        pass
    elif idp.idp_metadata_file is not None:
        metadata = {"local": [str(idp.idp_metadata_file)]}
    else:
        metadata = {"remote": [{"url": idp.idp_metadata_url}]}
    keys = {"key_file": str(idp.sp_key_file), "cert_file": str(idp.sp_cert_file)}
    config = SPConfig()
    config.load(
        {
            "entityid": sp_entity_id(idp, realm_url),
            "xmlsec_binary": xmlsec_binary(),
            **({"metadata": metadata} if metadata else {}),
            "service": {
                "sp": {
                    "name": "Palaver",
                    "endpoints": {
                        "assertion_consumer_service": [(acs, BINDING_HTTP_POST)],
                        "single_logout_service": [(acs, BINDING_HTTP_REDIRECT), (acs, BINDING_HTTP_POST)],
                    },
                    "allow_unsolicited": idp.idp_initiated,
                    "authn_requests_signed": True,
                    "logout_requests_signed": True,
                    "want_assertions_signed": True,
                    "want_response_signed": False,
                }
            },
            **keys,
            "encryption_keypairs": [keys],
            "accepted_time_diff": idp.clock_skew_seconds,
            "allow_unknown_attributes": True,
        }
    )
    # pysaml2 checks the signature of a Redirect-binding request (the IdP's LogoutRequest)
    # only when this IdP-side option is on; an unsigned logout of anyone must not count.
    config.setattr("idp", "want_authn_requests_signed", True)
    return config


@dataclass
class _Cached:
    client: Saml2Client
    idp_entity_id: str
    loaded: float


_clients: dict[tuple[str, str], _Cached] = {}
_clients_lock = threading.Lock()


def _client(idp: SamlIdp, realm_url: str) -> _Cached:
    key = (idp.name, realm_url)
    with _clients_lock:
        cached = _clients.get(key)
    if cached is not None and time.monotonic() - cached.loaded < METADATA_TTL_SECONDS:
        return cached
    from saml2 import SAMLError  # noqa: PLC0415
    from saml2.client import Saml2Client  # noqa: PLC0415

    try:
        client = Saml2Client(config=_config(idp, realm_url))
    except (SAMLError, OSError, ValueError) as e:
        raise SamlRefusedError(
            f"{idp.display_name}'s metadata cannot be read ({type(e).__name__})."
        ) from None
    entities = list(client.metadata.identity_providers())
    if len(entities) != 1:
        raise SamlRefusedError(f"{idp.display_name}'s metadata must describe exactly one identity provider.")
    cached = _Cached(client, entities[0], time.monotonic())
    with _clients_lock:
        _clients[key] = cached
    return cached


def idp_entity_id(idp: SamlIdp, realm_url: str) -> str:
    return _client(idp, realm_url).idp_entity_id


def begin(idp: SamlIdp, realm_url: str) -> tuple[str, str]:
    """A signed AuthnRequest for the IdP: its ID and the URL to send the browser to."""
    cached = _client(idp, realm_url)
    request_id, info = cached.client.prepare_for_authenticate(
        entityid=cached.idp_entity_id,
        binding=BINDING_HTTP_REDIRECT,
        response_binding=BINDING_HTTP_POST,
        sign=True,
        sigalg=SIG_RSA_SHA256,
    )
    location = dict(info["headers"])["Location"]
    return str(request_id), str(location)


def read_message(encoded: str, *, deflated: bool = False) -> SamlMessage | None:
    """The unchecked outline of an IdP's message (base64, deflated for the Redirect binding)."""
    # Loaded with the first SAML message read, not at start-up (tests/test_startup_imports.py).
    from xml.etree.ElementTree import Element  # noqa: PLC0415

    from defusedxml import ElementTree  # noqa: PLC0415

    try:
        raw = base64.b64decode(encoded, validate=False)
        if deflated:
            raw = zlib.decompress(raw, -15)
        root: Element = ElementTree.fromstring(raw)
    except (binascii.Error, ValueError, ElementTree.ParseError, Exception):
        # defusedxml refuses entities and DTDs with its own exceptions: all mean "unreadable".
        return None
    if not root.tag.startswith(PROTOCOL):
        return None
    issuer = root.find(f"{ASSERTION}Issuer")
    return SamlMessage(
        root.tag.removeprefix(PROTOCOL),
        (issuer.text or "").strip() if issuer is not None else "",
        root.get("InResponseTo", ""),
    )


def _refusal(idp: SamlIdp, error: Exception) -> SamlRefusedError:
    from saml2.response import StatusError, UnsolicitedResponse  # noqa: PLC0415
    from saml2.sigver import SignatureError  # noqa: PLC0415
    from saml2.validate import ResponseLifetimeExceed, ToEarly  # noqa: PLC0415

    name = idp.display_name
    message = str(error)
    if isinstance(error, SignatureError) or "Signature" in type(error).__name__:
        return SamlRefusedError(f"{name}'s answer has no valid signature.")
    if isinstance(error, ResponseLifetimeExceed):
        return SamlRefusedError(f"{name}'s answer has expired.")
    if isinstance(error, ToEarly):
        return SamlRefusedError(f"{name}'s answer is not valid yet.")
    if isinstance(error, UnsolicitedResponse):
        return SamlRefusedError(f"{name}'s answer does not answer a sign-in started here.")
    if isinstance(error, StatusError):
        return SamlRefusedError(f"{name} did not sign you in ({message or type(error).__name__}).")
    if "Condition not OK" in message:
        return SamlRefusedError(f"{name}'s answer is not valid at this time.")
    if "AudienceRestrictions" in message:
        return SamlRefusedError(f"{name}'s answer was issued to another service.")
    if "Decrypt" in type(error).__name__ or "decrypt" in message.lower():
        return SamlRefusedError(f"{name}'s answer cannot be decrypted with this server's key.")
    return SamlRefusedError(f"{name}'s answer is invalid ({type(error).__name__}).")


def _first(values: object) -> str:
    if isinstance(values, list) and values and isinstance(values[0], str):
        return values[0].strip()
    return ""


def complete(idp: SamlIdp, realm_url: str, encoded: str, in_response_to: str) -> SamlSignIn:
    """The person a posted ``SAMLResponse`` vouches for, once every check has passed.

    ``in_response_to`` is the request the answer claims to answer; the caller checks that it
    is one of ours, started in this browser, and spends it.
    """
    cached = _client(idp, realm_url)
    outstanding = {in_response_to: "/"} if in_response_to else {}
    try:
        response = cached.client.parse_authn_request_response(encoded, BINDING_HTTP_POST, outstanding)
    except Exception as e:
        raise _refusal(idp, e) from None
    if response is None or response.assertion is None or response.name_id is None:
        raise SamlRefusedError(f"{idp.display_name}'s answer holds no assertion.")
    if response.issuer() != cached.idp_entity_id:
        raise SamlRefusedError(f"{idp.display_name}'s answer comes from another issuer.")
    attributes = response.ava or {}
    email = _first(attributes.get(idp.email_attribute))
    if "@" not in email:
        raise SamlRefusedError(f"{idp.display_name} did not tell us your email address.")
    # An assertion without the attribute puts them in no group: a mapping then takes them away.
    groups = frozenset(g for g in attributes.get(idp.groups_attribute) or [] if isinstance(g, str))
    if idp.required_groups and not set(idp.required_groups) & groups:
        raise SamlRefusedError(
            f"{idp.display_name} says you are in none of the groups that may use this organization."
        )
    subject = (response.name_id.text or "").strip()
    if not subject or len(subject) > 255:
        raise SamlRefusedError(f"{idp.display_name}'s answer names nobody.")
    ends = response.not_on_or_after or 0
    now = datetime.now(UTC).replace(tzinfo=None)
    expires = (
        datetime.fromtimestamp(ends, UTC).replace(tzinfo=None) if ends else now + DEFAULT_REPLAY_WINDOW
    ) + timedelta(seconds=idp.clock_skew_seconds)
    statements = response.assertion.authn_statement or []
    session_index = (statements[0].session_index or "") if statements else ""
    account = ExternalAccount(
        idp.button_name,
        subject,
        email.lower(),
        _first(attributes.get(idp.name_attribute)),
        groups=groups if idp.groups_attribute else None,
    )
    return SamlSignIn(
        account,
        f"{cached.idp_entity_id} {response.assertion.id}",
        expires,
        str(response.name_id),
        session_index,
    )


def logout_url(idp: SamlIdp, realm_url: str, name_id_xml: str, session_index: str) -> str | None:
    """A signed LogoutRequest for the IdP (Redirect binding), if it has a logout endpoint."""
    from saml2 import SAMLError  # noqa: PLC0415
    from saml2.saml import name_id_from_string  # noqa: PLC0415

    try:
        cached = _client(idp, realm_url)
        services = cached.client.metadata.single_logout_service(
            cached.idp_entity_id, BINDING_HTTP_REDIRECT, "idpsso"
        )
    except (SamlRefusedError, SAMLError):
        return None
    if not services:
        return None
    destination = services[0]["location"]
    _, request = cached.client.create_logout_request(
        destination,
        cached.idp_entity_id,
        name_id=name_id_from_string(name_id_xml),
        session_indexes=[session_index] if session_index else None,
        sign=False,
    )
    info = cached.client.apply_binding(
        BINDING_HTTP_REDIRECT, str(request), destination, "", sign=True, sigalg=SIG_RSA_SHA256
    )
    return str(dict(info["headers"])["Location"])


@dataclass(frozen=True)
class IdpLogout:
    """A signed LogoutRequest from the IdP (IdP-initiated single logout) and our answer."""

    name_id: str
    session_indexes: tuple[str, ...]
    answer_url: str


def take_logout_request(
    idp: SamlIdp, realm_url: str, encoded: str, relay_state: str | None, sigalg: str, signature: str
) -> IdpLogout | None:
    """The IdP's LogoutRequest (Redirect binding), if signed by the IdP; None otherwise."""
    if not sigalg or not signature:
        return None
    cached = _client(idp, realm_url)
    try:
        request = cached.client.parse_logout_request(
            encoded, BINDING_HTTP_REDIRECT, relay_state=relay_state, sigalg=sigalg, signature=signature
        )
    except Exception:  # pysaml2's checks raise bare Exceptions
        return None
    message = request.message if request is not None else None
    if message is None or message.issuer is None or message.issuer.text != cached.idp_entity_id:
        return None
    services = cached.client.metadata.single_logout_service(
        cached.idp_entity_id, BINDING_HTTP_REDIRECT, "idpsso"
    )
    if not services or message.name_id is None:
        return None
    response = cached.client.create_logout_response(message, [BINDING_HTTP_REDIRECT])
    info = cached.client.apply_binding(
        BINDING_HTTP_REDIRECT,
        str(response),
        services[0]["location"],
        relay_state or "",
        response=True,
        sign=True,
        sigalg=SIG_RSA_SHA256,
    )
    return IdpLogout(
        (message.name_id.text or "").strip(),
        tuple(s.text for s in message.session_index or [] if s.text),
        str(dict(info["headers"])["Location"]),
    )


def logout_confirmed(idp: SamlIdp, realm_url: str, encoded: str, binding: str) -> bool:
    """Whether a LogoutResponse from the IdP is valid and says the IdP session ended."""
    try:
        response = _client(idp, realm_url).client.parse_logout_request_response(encoded, binding)
    except Exception:
        return False
    return response is not None and bool(response.status_ok())


def sp_metadata(idp: SamlIdp, realm_url: str) -> str:
    """Our metadata for the IdP: entity ID, endpoints, and the certificate to verify and encrypt."""
    from saml2.metadata import entity_descriptor  # noqa: PLC0415

    config = _config(idp, realm_url, with_idp=False)
    return str(entity_descriptor(config))


REDIRECT = BINDING_HTTP_REDIRECT
POST = BINDING_HTTP_POST
