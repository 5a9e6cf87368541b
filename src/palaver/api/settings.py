"""PATCH /settings (and the legacy /settings/display and /settings/notifications)."""

from __future__ import annotations

import inspect
import math
from typing import Any

from palaver.actions.account_emails import check_email_change, do_request_email_change
from palaver.actions.user_settings import do_update_personal_settings
from palaver.api.auth import clear_username_limit, hit_username_limit
from palaver.api.context import Ctx
from palaver.api.params import set_signature
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.exceptions import InvalidArgumentError, JsonableError, MissingArgumentError
from palaver.lib.realm import realm_email_host
from palaver.lib.user_settings import SettingSpec, is_valid_timezone, setting_specs

router = ApiRouter()

MIN_PASSWORD_LENGTH = 6


def settings_signature(
    base: inspect.Signature, specs: dict[str, SettingSpec]
) -> tuple[inspect.Signature, dict[str, Any]]:
    """Extend a view's signature with one optional parameter per setting.

    The settings table is the one place settings are declared; views taking "any subset of
    the settings" get their parameters from it instead of repeating sixty of them.
    """
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=spec.type | None)
        for name, spec in specs.items()
    ]
    params = [p for p in base.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    annotations = {p.name: p.annotation for p in extra}
    return base.replace(parameters=params + extra), annotations


def check_setting_values(specs: dict[str, SettingSpec], values: dict[str, Any]) -> dict[str, Any]:
    changes = {name: value for name, value in values.items() if name in specs and value is not None}
    for name, value in changes.items():
        if not specs[name].check(value):
            raise InvalidArgumentError(name)
    return changes


def _check_old_password(ctx: Ctx, old_password: str) -> None:
    # Whoever holds an API key could otherwise guess the password behind it without limit;
    # attempts here count against the same per-account limit as logins.
    username = ctx.requester.delivery_email
    attempt = hit_username_limit(ctx, username)
    if not attempt.allowed:
        seconds = math.ceil(attempt.retry_after)
        raise JsonableError(f"You're making too many attempts! Try again in {seconds} seconds.")
    if not ctx.services.passwords.verify(ctx.me.password, old_password):
        raise JsonableError("Wrong password!")
    clear_username_limit(ctx, username)


def update_settings(
    ctx: Ctx,
    full_name: str | None = None,
    email: str | None = None,
    old_password: str | None = None,
    new_password: str | None = None,
    timezone: str | None = None,
    **settings: Any,
) -> JsonDict:
    user = ctx.me
    passwords = ctx.services.passwords
    change_email = email is not None and email.strip().lower() != user.delivery_email.lower()
    if change_email and email is not None:
        # Checked first, so a refused address leaves every other setting unchanged.
        check_email_change(ctx.session, user, email)
    new_hash = None
    if new_password is not None:
        if old_password is None:
            raise MissingArgumentError("old_password")
        _check_old_password(ctx, old_password)
        if len(new_password) < MIN_PASSWORD_LENGTH:
            raise JsonableError("New password is too weak!")
        new_hash = passwords.hash(new_password)
    if timezone is not None and not is_valid_timezone(timezone):
        raise JsonableError(f"Invalid timezone '{timezone}'")
    changes = check_setting_values(setting_specs(), settings)
    do_update_personal_settings(
        ctx.session,
        user,
        email_host=realm_email_host(ctx.services.settings, realm_settings(ctx.session, ctx.realm_id)),
        full_name=full_name,
        timezone=timezone,
        new_password_hash=new_hash,
        settings=changes,
    )
    if change_email and email is not None:
        # The new address must be confirmed: a link goes to it, and the change applies when
        # it is opened (actions/account_emails.py).
        do_request_email_change(ctx.session, user, email)
    return {}


# The table's settings include ``timezone``-like names only once; the explicit parameters
# above come first so they are never shadowed.
_specs = {k: v for k, v in setting_specs().items() if k not in ("timezone",)}
_signature, _extra_annotations = settings_signature(inspect.signature(update_settings), _specs)
set_signature(update_settings, _signature)
update_settings.__annotations__ = {**update_settings.__annotations__, **_extra_annotations}

for _path in ("/settings", "/settings/display", "/settings/notifications"):
    router.patch(_path)(update_settings)
