"""Sign-in beyond passwords: the identities people sign in with, and the record of logins."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class ExternalIdentity(Base):
    """An account at a provider (a directory entry, an OpenID Connect subject) and the
    Palaver user it signs in as.

    Keyed by what never changes at the provider (entryUUID, ``sub``), so a person whose
    email changes there keeps their Palaver account and its address follows.
    """

    __tablename__ = "external_identity"
    __table_args__ = (UniqueConstraint("realm_id", "provider", "subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    # "ldap", "oidc:NAME", "github", "gitlab", "google".
    provider: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    date_linked: Mapped[datetime] = mapped_column(default=utcnow)
    # SHA-256 of the provider's picture last made the avatar: an unchanged photo is not re-stored.
    avatar_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    # Deactivated because the provider dropped or disabled them (not by an administrator), so
    # their return reactivates the account; cleared by any reactivation.
    deactivated_by_provider: Mapped[bool] = mapped_column(default=False)


class LoginRecord(Base):
    """One successful sign-in (how, from where, with what), or an administrator's change to
    someone's sign-in; administrators read these."""

    __tablename__ = "login_record"

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    # "password", "ldap", "oidc:NAME", "github", ...; the API key fetch and the browser alike.
    method: Mapped[str] = mapped_column(String(64))
    # "web" (a browser session), "api" (fetch_api_key) or "app" (the mobile/desktop OTP flow).
    channel: Mapped[str] = mapped_column(String(16))
    ip_address: Mapped[str] = mapped_column(String(64), default="")
    user_agent: Mapped[str] = mapped_column(String(255), default="")
    timestamp: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    # Set on what an administrator did to the user's sign-in (method "two_factor_reset",
    # channel "admin"): who did it (a soft reference: the record outlives its author's
    # account). The address and browser are then the administrator's.
    acting_user_id: Mapped[int | None] = mapped_column(default=None)


class SsoAttempt(Base):
    """A sign-in begun at a provider and not yet returned from it (at most ten minutes).

    The ``state`` sent to the provider and the cookie left in the browser are stored only
    hashed; the callback must bring both, and deletes the row (single use, this browser only).
    """

    __tablename__ = "sso_attempt"

    id: Mapped[int] = mapped_column(primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    browser_hash: Mapped[str] = mapped_column(String(64))
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # OAuthProvider.path: "oidc/NAME", "github"...
    provider: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(128))
    code_verifier: Mapped[str] = mapped_column(String(128))
    # Where to go after sign-in: a same-origin path.
    next_path: Mapped[str] = mapped_column(String(2000), default="/")
    # The apps' flow, mobile or desktop, as lib/app_flow.py stores it (AppFlow.stored()).
    mobile_flow_otp: Mapped[str | None] = mapped_column(String(64), default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class TwoFactorDevice(Base):
    """A user's TOTP authenticator (RFC 6238); ``confirmed`` once a code from it was typed."""

    __tablename__ = "two_factor_device"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), unique=True
    )
    # Base32, as authenticator apps take it.
    secret: Mapped[str] = mapped_column(String(64))
    confirmed: Mapped[bool] = mapped_column(default=False)
    # The time step of the last code accepted: a code works once, even within its 30 seconds.
    last_used_step: Mapped[int] = mapped_column(default=0)
    created: Mapped[datetime] = mapped_column(default=utcnow)


class RecoveryCode(Base):
    """A one-time code for when the authenticator is lost; stored only as its SHA-256 (the
    codes are random, so a fast hash is enough: there is nothing to guess from it)."""

    __tablename__ = "recovery_code"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    code_hash: Mapped[str] = mapped_column(String(64))


class TrustedBrowser(Base):
    """A browser whose owner asked not to be asked for a code again for a while."""

    __tablename__ = "trusted_browser"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires: Mapped[datetime]


class PendingLogin(Base):
    """A password checked, a second factor still owed (at most ten minutes)."""

    __tablename__ = "pending_login"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    method: Mapped[str] = mapped_column(String(64))
    next_path: Mapped[str] = mapped_column(String(2000), default="/")
    mobile_flow_otp: Mapped[str | None] = mapped_column(String(64), default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)


class Passkey(Base):
    """A WebAuthn credential (a passkey) a user registered; several per user."""

    __tablename__ = "passkey"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    # base64url, as the browser reports it.
    credential_id: Mapped[str] = mapped_column(String(1400), unique=True)
    # The COSE public key, base64url.
    public_key: Mapped[str] = mapped_column(Text)
    sign_count: Mapped[int] = mapped_column(default=0)
    name: Mapped[str] = mapped_column(String(100), default="")
    created: Mapped[datetime] = mapped_column(default=utcnow)
    last_used: Mapped[datetime | None] = mapped_column(default=None)


class WebAuthnChallenge(Base):
    """A challenge sent to a browser for a passkey ceremony (at most five minutes, used once).

    Bound to the browser by a cookie stored only hashed; a registration's is also the user's.
    """

    __tablename__ = "webauthn_challenge"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    user_profile_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), default=None, index=True
    )
    # "register" or "authenticate".
    purpose: Mapped[str] = mapped_column(String(16))
    challenge: Mapped[str] = mapped_column(String(200))
    created: Mapped[datetime] = mapped_column(default=utcnow)


class SamlAssertion(Base):
    """A SAML assertion accepted once: its ID is kept until the assertion expires, so the same
    assertion brought again (a replay) is refused while it would still be valid."""

    __tablename__ = "saml_assertion"

    id: Mapped[int] = mapped_column(primary_key=True)
    # "<IdP entity ID> <assertion ID>": IDs are unique per issuer only.
    assertion_key: Mapped[str] = mapped_column(String(600), unique=True)
    expires: Mapped[datetime] = mapped_column(index=True)


class SamlSession(Base):
    """The IdP session a browser session was signed in by, for single logout."""

    __tablename__ = "saml_session"

    id: Mapped[int] = mapped_column(primary_key=True)
    web_session_id: Mapped[int] = mapped_column(ForeignKey("web_session.id", ondelete="CASCADE"), unique=True)
    # SamlIdp.path: "saml/NAME".
    provider: Mapped[str] = mapped_column(String(64))
    # The assertion's NameID element, as XML (its format and qualifiers go back in the logout).
    name_id: Mapped[str] = mapped_column(Text)
    session_index: Mapped[str] = mapped_column(String(255), default="")


class DesktopLoginToken(Base):
    """A one-time token handed to the desktop app, encrypted with its pad (desktop_flow_otp):
    it becomes a browser session in the app's own window, once and within a minute."""

    __tablename__ = "desktop_login_token"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    created: Mapped[datetime] = mapped_column(default=utcnow, index=True)
