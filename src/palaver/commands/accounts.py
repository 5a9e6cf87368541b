"""Operator's account commands: (de)activate, change role and email. All go through actions."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.commands.common import AddCommand, CliError, require_user, role_arg, settings_from_args
from palaver.models import Role, UserProfile
from palaver.models.requester import Requester


def _acting_owner(session: Session, user: UserProfile) -> UserProfile:
    """The operator acts with an owner's authority; actions want a user to check against."""
    owner = session.scalars(
        select(UserProfile)
        .where(UserProfile.realm_id == user.realm_id, UserProfile.role == Role.OWNER, UserProfile.is_active)
        .order_by(UserProfile.id)
        .limit(1)
    ).first()
    return owner if owner is not None else user


def cmd_deactivate_user(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_deactivate_user
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        do_deactivate_user(session, user, acting_user=None)
        print(f"Deactivated {user.delivery_email} (user ID {user.id})")


def cmd_reactivate_user(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_reactivate_user
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        do_reactivate_user(session, user)
        print(f"Reactivated {user.delivery_email} (user ID {user.id})")


def cmd_change_role(args: argparse.Namespace) -> None:
    from palaver.actions.users import do_change_user_role
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        if user.is_bot and args.role == Role.OWNER:
            raise CliError("a bot cannot be an organization owner")
        do_change_user_role(session, user, args.role, acting_user=Requester.of(_acting_owner(session, user)))
        print(f"{user.delivery_email} is now {Role(args.role).name.lower()}")


def cmd_change_email(args: argparse.Namespace) -> None:
    from palaver.actions.user_email import do_change_user_delivery_email
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_email_host

    settings = settings_from_args(args)
    with open_services(settings) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        old = user.delivery_email
        do_change_user_delivery_email(session, user, args.new_email, realm_email_host(settings, user.realm))
        print(f"Email changed from {old} to {user.delivery_email}")


def register(add: AddCommand) -> None:
    def user_command(
        name: str, func: Callable[[argparse.Namespace], None], help_text: str
    ) -> argparse.ArgumentParser:
        p = add(name, func, help_text)
        p.add_argument("--realm", default="", help="organization string ID (default: root domain)")
        p.add_argument("--email", required=True, help="the user's (real) email address")
        return p

    user_command("deactivate-user", cmd_deactivate_user, "deactivate a user (their bots too)")
    user_command("reactivate-user", cmd_reactivate_user, "reactivate a deactivated user")
    role = user_command("change-role", cmd_change_role, "change a user's role")
    role.add_argument(
        "--role", type=role_arg, required=True, help="owner, administrator, moderator, member, guest"
    )
    email = user_command("change-email", cmd_change_email, "change a user's email address")
    email.add_argument("--new-email", required=True, help="the new address")
