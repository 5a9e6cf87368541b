"""The demo organization ``palaver serve`` creates on an empty database."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TextIO

from sqlalchemy.orm import Session

from palaver.actions.realm import do_create_realm
from palaver.actions.users import do_create_user
from palaver.config import Settings
from palaver.lib.passwords import generate_password
from palaver.lib.realm import realm_email_host, realm_url
from palaver.models import BotType, Realm, Role
from palaver.services import Services

DEMO_OWNER = "owner@example.com"


@dataclass(frozen=True)
class DemoLogin:
    url: str
    email: str
    password: str
    api_key: str


def create_demo_realm(services: Services, session: Session) -> DemoLogin:
    settings = services.settings
    string_id = settings.root_realm_string_id
    email_host = realm_email_host(settings, Realm(string_id=string_id, name=""))
    password = generate_password()
    realm, owner = do_create_realm(
        session,
        string_id=string_id,
        name="Palaver Demo",
        description="A demo organization created by `palaver serve`.",
        owner_email=DEMO_OWNER,
        owner_full_name="Demo Owner",
        owner_password_hash=services.passwords.hash(password),
        email_host=email_host,
    )
    for email, name, role in (
        ("alice@example.com", "Alice Admin", Role.ADMINISTRATOR),
        ("bob@example.com", "Bob Member", Role.MEMBER),
        ("gus@example.com", "Gus Guest", Role.GUEST),
    ):
        do_create_user(
            session, realm, email=email, full_name=name, password_hash=None, email_host=email_host, role=role
        )
    do_create_user(
        session,
        realm,
        email="demo-bot@example.com",
        full_name="Demo Bot",
        password_hash=None,
        email_host=email_host,
        bot_type=BotType.GENERIC,
        bot_owner_id=owner.id,
    )
    return DemoLogin(realm_url(settings, realm), owner.delivery_email, password, owner.api_key)


def zuliprc(login: DemoLogin) -> str:
    return f"[api]\nemail={login.email}\nkey={login.api_key}\nsite={login.url}\n"


def describe_demo(settings: Settings, login: DemoLogin, out: TextIO) -> None:
    path = settings.data_dir / "demo.zuliprc"
    path.parent.mkdir(parents=True, exist_ok=True)
    # The file holds an owner's API key: create it private rather than chmod it after
    # writing, which leaves a window where it is world-readable. fchmod covers a file
    # left by an earlier run with looser permissions.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(zuliprc(login))
    out.write(
        '\nCreated the demo organization "Palaver Demo".\n'
        f"  URL:      {login.url}\n"
        f"  Email:    {login.email}\n"
        f"  Password: {login.password}\n"
        f"  API key:  {login.api_key}\n"
        f"Open {login.url}/ in a browser and log in with this email and password.\n\n"
        f"zuliprc (also saved to {path}):\n\n{zuliprc(login)}\n"
    )
