"""Talking to an OpenID Connect provider (Authlib's OAuth 2 and PKCE, joserfc for the ID token),
and GitHub's OAuth 2, which is not OpenID Connect and has its own small adapter.

The authorization code flow, always with PKCE (S256), ``state`` and (OIDC) ``nonce``. The
provider's endpoints come from its discovery document; its signing keys from its JWKS,
fetched again when a token names a key not yet seen (key rotation). An ID token counts only
with a valid signature by one of those keys, our issuer, our client as audience, our nonce,
and within its validity (``clock_skew_seconds`` either way). An email counts only when the
provider says it is verified.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from palaver.auth_config import OAuthProvider
from palaver.lib.exceptions import JsonableError
from palaver.lib.external_auth import ExternalAccount
from palaver.lib.provider_groups import groups_from_claim

# Discovery documents and key sets are kept this long; an unknown key ID fetches keys anew.
METADATA_TTL_SECONDS = 3600
HTTP_TIMEOUT_SECONDS = 10
# Asymmetric algorithms only: an HS256 token would be "signed" with our own client secret.
SIGNING_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class SignInRefusedError(JsonableError):
    """The provider's answer does not prove who is signing in; the message is for the page."""

    code = "SSO_REFUSED"
    http_status = 403


@dataclass(frozen=True)
class Authorization:
    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass
class _Cached:
    value: dict[str, Any]
    fetched: float


_cache: dict[str, _Cached] = {}
_cache_lock = threading.Lock()


def _get_json(url: str, *, fresh: bool = False) -> dict[str, Any]:
    with _cache_lock:
        cached = _cache.get(url)
    if cached is not None and not fresh and time.monotonic() - cached.fetched < METADATA_TTL_SECONDS:
        return cached.value
    try:
        response = httpx.get(url, timeout=HTTP_TIMEOUT_SECONDS, headers={"Accept": "application/json"})
        response.raise_for_status()
        value = response.json()
    except (httpx.HTTPError, ValueError) as e:
        raise SignInRefusedError(f"The sign-in provider could not be reached ({type(e).__name__}).") from None
    if not isinstance(value, dict):
        raise SignInRefusedError("The sign-in provider sent an unreadable answer.")
    with _cache_lock:
        _cache[url] = _Cached(value, time.monotonic())
    return value


def discovery(provider: OAuthProvider) -> dict[str, Any]:
    document = _get_json(provider.issuer.rstrip("/") + "/.well-known/openid-configuration")
    if document.get("issuer") != provider.issuer:
        # OpenID Connect Discovery §4.3: the document must be the issuer's own.
        raise SignInRefusedError("The sign-in provider's discovery document names another issuer.")
    return document


def _endpoints(provider: OAuthProvider) -> tuple[str, str]:
    if provider.is_oidc:
        document = discovery(provider)
        return str(document["authorization_endpoint"]), str(document["token_endpoint"])
    base = provider.github_url.rstrip("/")
    return f"{base}/login/oauth/authorize", f"{base}/login/oauth/access_token"


def begin(provider: OAuthProvider, redirect_uri: str) -> Authorization:
    """Where to send the browser, with a fresh state, nonce and PKCE verifier."""
    authorize_url, _ = _endpoints(provider)
    state, nonce, verifier = generate_token(43), generate_token(43), generate_token(64)
    extra = {"nonce": nonce} if provider.is_oidc else {}
    url = prepare_grant_uri(
        authorize_url,
        provider.client_id,
        "code",
        redirect_uri,
        " ".join(provider.scopes),
        state,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
        **extra,
    )
    return Authorization(str(url), state, nonce, verifier)


def _exchange(provider: OAuthProvider, redirect_uri: str, code: str, verifier: str) -> dict[str, Any]:
    """The token response for ``code`` (client_secret_basic, RFC 6749 §2.3.1)."""
    _, token_url = _endpoints(provider)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    auth = (quote(provider.client_id, safe=""), quote(provider.client_secret, safe=""))
    try:
        response = httpx.post(
            token_url,
            data=form,
            auth=auth,
            headers={"Accept": "application/json"},
            timeout=HTTP_TIMEOUT_SECONDS,
        )
        token = response.json()
    except (httpx.HTTPError, ValueError):
        raise SignInRefusedError("The sign-in provider could not be reached to finish the sign-in.") from None
    if response.status_code != 200 or not isinstance(token, dict) or "error" in token:
        error = token.get("error_description") or token.get("error") if isinstance(token, dict) else None
        raise SignInRefusedError(
            f"The sign-in provider refused the sign-in ({error or response.status_code})."
        )
    return token


def _keys(provider: OAuthProvider, *, fresh: bool = False) -> KeySet:
    document = _get_json(str(discovery(provider)["jwks_uri"]), fresh=fresh)
    try:
        return KeySet.import_key_set(document)  # type: ignore[arg-type]
    except (JoseError, ValueError, KeyError, TypeError):
        raise SignInRefusedError("The sign-in provider's signing keys are unreadable.") from None


def verify_id_token(
    provider: OAuthProvider, id_token: str, nonce: str, *, now: int | None = None
) -> dict[str, Any]:
    """The claims of a valid ID token, or SignInRefusedError saying what was wrong."""
    try:
        try:
            token = jwt.decode(id_token, _keys(provider), algorithms=SIGNING_ALGORITHMS)
        except InvalidKeyIdError:
            # A key we have not seen: the provider may have rotated its keys.
            token = jwt.decode(id_token, _keys(provider, fresh=True), algorithms=SIGNING_ALGORITHMS)
    except JoseError:
        raise SignInRefusedError("The sign-in provider's ID token has no valid signature.") from None
    except ValueError:
        raise SignInRefusedError("The sign-in provider's ID token is malformed.") from None
    registry = jwt.JWTClaimsRegistry(
        now=now,
        leeway=provider.clock_skew_seconds,
        iss={"essential": True, "value": provider.issuer},
        aud={"essential": True, "value": provider.client_id},
        sub={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(token.claims)
    except JoseError as e:
        claim = getattr(e, "claim", "")
        reasons = {
            "exp": "has expired",
            "iat": "was issued in the future",
            "nbf": "is not valid yet",
            "nonce": "belongs to another sign-in",
            "aud": "was issued to another application",
            "iss": "comes from another issuer",
        }
        reason = reasons.get(claim, f"is invalid ({e.error})")
        raise SignInRefusedError(f"The sign-in provider's ID token {reason}.") from None
    azp = token.claims.get("azp")
    if azp is not None and azp != provider.client_id:
        raise SignInRefusedError("The sign-in provider's ID token was issued to another application.")
    return dict(token.claims)


def _userinfo(provider: OAuthProvider, access_token: str) -> dict[str, Any]:
    url = discovery(provider).get("userinfo_endpoint")
    if not url or not access_token:
        return {}
    try:
        response = httpx.get(
            str(url), headers={"Authorization": f"Bearer {access_token}"}, timeout=HTTP_TIMEOUT_SECONDS
        )
        response.raise_for_status()
        value = response.json()
    except (httpx.HTTPError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _account(
    provider: OAuthProvider, subject: str, email: object, verified: object, name: object
) -> ExternalAccount:
    if not isinstance(email, str) or "@" not in email:
        raise SignInRefusedError(f"{provider.display_name} did not tell us your email address.")
    if verified is not True:
        raise SignInRefusedError(
            f"{provider.display_name} has not verified your email address {email}; verify it there first."
        )
    full_name = name if isinstance(name, str) else ""
    return ExternalAccount(provider.button_name, subject, email.strip().lower(), full_name.strip())


def complete(
    provider: OAuthProvider, redirect_uri: str, code: str, verifier: str, nonce: str
) -> ExternalAccount:
    """The person the provider vouches for, from the code it sent back."""
    token = _exchange(provider, redirect_uri, code, verifier)
    if not provider.is_oidc:
        return _github_account(provider, str(token.get("access_token") or ""))
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise SignInRefusedError("The sign-in provider sent no ID token.")
    claims = verify_id_token(provider, id_token, nonce)
    subject = str(claims["sub"])
    if "email" not in claims or (provider.groups_claim and provider.groups_claim not in claims):
        # Providers may keep the profile claims for the userinfo endpoint; it must be about
        # the same subject (OpenID Connect Core §5.3.2).
        info = _userinfo(provider, str(token.get("access_token") or ""))
        if info.get("sub") == subject:
            claims = {**info, **claims}
    account = _account(
        provider, subject, claims.get("email"), claims.get("email_verified"), claims.get("name")
    )
    if not provider.groups_claim:
        return account
    # A provider that names no groups at all means none: the mapping then takes them away.
    groups = groups_from_claim(claims.get(provider.groups_claim, []))
    return replace(account, groups=groups if groups is not None else frozenset())


def _github_account(provider: OAuthProvider, access_token: str) -> ExternalAccount:
    """GitHub's user: its numeric ID as subject, its primary verified email."""
    if not access_token:
        raise SignInRefusedError("GitHub sent no access token.")
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/vnd.github+json"}
    base = provider.github_api_url.rstrip("/")
    try:
        user = httpx.get(f"{base}/user", headers=headers, timeout=HTTP_TIMEOUT_SECONDS)
        emails = httpx.get(f"{base}/user/emails", headers=headers, timeout=HTTP_TIMEOUT_SECONDS)
        user.raise_for_status()
        emails.raise_for_status()
        profile, addresses = user.json(), emails.json()
    except (httpx.HTTPError, ValueError):
        raise SignInRefusedError("GitHub could not be asked who you are.") from None
    if not isinstance(profile, dict) or "id" not in profile or not isinstance(addresses, list):
        raise SignInRefusedError("GitHub sent an unreadable answer.")
    primary = next((a for a in addresses if isinstance(a, dict) and a.get("primary")), {})
    name = profile.get("name") or profile.get("login") or ""
    return _account(provider, str(profile["id"]), primary.get("email"), primary.get("verified"), name)
