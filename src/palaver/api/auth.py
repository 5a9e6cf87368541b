"""POST /fetch_api_key: trade a password (Palaver's own, or the directory's) for the API key."""

from __future__ import annotations

from palaver.actions.external_logins import do_external_sign_in
from palaver.actions.logins import do_record_login
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.auth_methods import EMAIL, LDAP, method_enabled
from palaver.lib.exceptions import (
    AuthenticationFailedError,
    JsonableError,
    RealmDeactivatedError,
    UserDeactivatedError,
)
from palaver.lib.rate_limit import RateLimitResult, raise_if_limited
from palaver.lib.realm import get_realm, realm_email_host
from palaver.lib.storage import make_storage
from palaver.lib.two_factor import GUARDED_METHODS, second_factors_owed
from palaver.lib.users import get_user_by_delivery_email
from palaver.models import UserProfile

router = ApiRouter()


class TwoFactorRequiredError(JsonableError):
    code = "TWO_FACTOR_REQUIRED"
    http_status = 401

    def __init__(self) -> None:
        super().__init__(
            "This account uses two-factor authentication. Sign in through the browser "
            "(the login page, which the apps open for you) instead."
        )


def _username_key(ctx: Ctx, username: str) -> str:
    return f"auth-user:{ctx.realm_id}:{username.strip().lower()}"


def hit_username_limit(ctx: Ctx, username: str) -> RateLimitResult:
    """Count one password attempt on an account, whichever endpoint it comes through."""
    return ctx.services.rate_limiter.hit(
        _username_key(ctx, username), ctx.services.settings.auth_rate_limit_per_username
    )


def clear_username_limit(ctx: Ctx, username: str) -> None:
    """Forget the attempts on an account once its owner has shown they know the password.

    The limit is there to stop guessing; kept after a success, it would lock out a user who
    logs in from several devices.
    """
    ctx.services.rate_limiter.clear(
        _username_key(ctx, username), ctx.services.settings.auth_rate_limit_per_username
    )


def _check_attempt_limits(ctx: Ctx, username: str) -> None:
    by_ip = ctx.services.settings.auth_rate_limit_per_ip
    raise_if_limited(ctx.services.rate_limiter.hit(f"auth-ip:{ctx.client_ip}", by_ip), "auth")
    raise_if_limited(hit_username_limit(ctx, username), "auth")


def check_password_login(ctx: Ctx, username: str, password: str) -> UserProfile:
    """The account a password login names, rate-limited; raises the error to show otherwise."""
    return check_login(ctx, username, password)[0]


def check_login(ctx: Ctx, username: str, password: str) -> tuple[UserProfile, str]:
    """The account a username and password sign in as, and the method that took them
    ("password": the one Palaver stores; "ldap": the company directory's).

    Shared by ``fetch_api_key`` and the browser's login form, so both count attempts under
    the same keys. The organization's methods decide which passwords count (Zulip tries its
    backends in turn the same way).
    """
    realm = get_realm(ctx.session, ctx.realm_id)
    settings = ctx.services.settings
    _check_attempt_limits(ctx, username)
    if method_enabled(settings, realm, EMAIL):
        user = _stored_password_user(ctx, username, password)
        if user is not None:
            clear_username_limit(ctx, username)
            if realm.deactivated:
                raise RealmDeactivatedError()
            if not user.is_active:
                raise UserDeactivatedError()
            return user, "password"
    if settings.auth.ldap is not None and method_enabled(settings, realm, LDAP):
        # ldap3 is loaded only where a configured [auth.ldap] is used, not at start-up.
        from palaver.lib import ldap_directory  # noqa: PLC0415

        account = ldap_directory.authenticate(settings.auth.ldap, username, password)
        if account is not None:
            clear_username_limit(ctx, username)
            email_host = realm_email_host(settings, realm)
            storage = make_storage(settings)
            user = do_external_sign_in(ctx.session, realm, account, email_host=email_host, storage=storage)
            return user, "ldap"
    raise AuthenticationFailedError()


def _stored_password_user(ctx: Ctx, username: str, password: str) -> UserProfile | None:
    user = get_user_by_delivery_email(ctx.session, ctx.realm_id, username)
    stored = user.password if user is not None and not user.is_bot else None
    if user is None or stored is None:
        # Verifying returns at once when there is no stored hash; hashing costs what a
        # verification does, so a missing account takes as long to reject as a wrong password.
        ctx.services.passwords.hash(password)
        return None
    return user if ctx.services.passwords.verify(stored, password) else None


@router.post("/fetch_api_key", auth="none", rate_limited=False)
def fetch_api_key(ctx: Ctx, username: str, password: str) -> JsonDict:
    user, method = check_login(ctx, username, password)
    if method in GUARDED_METHODS and second_factors_owed(ctx.session, user) is not None:
        # The password alone must not hand out a key that never expires.
        raise TwoFactorRequiredError()
    do_record_login(ctx.session, user, client=ctx.user_agent, method=method, ip_address=ctx.client_ip)
    return {"api_key": user.api_key, "email": user.email, "user_id": user.id}
