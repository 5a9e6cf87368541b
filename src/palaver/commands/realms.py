"""Operator's organization commands: list, deactivate, reactivate."""

from __future__ import annotations

import argparse
import json

from sqlalchemy import func, select

from palaver.commands.common import AddCommand, require_realm, settings_from_args
from palaver.models import Realm, UserProfile


def cmd_list_realms(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.lib.realm import realm_url

    settings = settings_from_args(args)
    with open_services(settings) as services, services.db.session() as session:
        counted = session.execute(
            select(UserProfile.realm_id, func.count())
            .where(UserProfile.is_active, UserProfile.is_bot.is_(False))
            .group_by(UserProfile.realm_id)
        )
        counts: dict[int, int] = {realm_id: n for realm_id, n in counted}
        rows = [
            {
                "realm_id": realm.id,
                "string_id": realm.string_id,
                "name": realm.name,
                "url": realm_url(settings, realm),
                "active_humans": counts.get(realm.id, 0),
                "is_active": not realm.deactivated,
            }
            for realm in session.scalars(select(Realm).order_by(Realm.id))
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'ID':>5}  {'STRING ID':<20} {'USERS':>6}  {'ACTIVE':<6} {'URL':<40} NAME")
    for r in rows:
        active = "yes" if r["is_active"] else "no"
        sid = r["string_id"] or '""'
        print(
            f"{r['realm_id']:>5}  {sid:<20} {r['active_humans']:>6}  {active:<6} {r['url']:<40} {r['name']}"
        )


def cmd_deactivate_realm(args: argparse.Namespace) -> None:
    from palaver.actions.realm_lifecycle import do_deactivate_realm
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        do_deactivate_realm(session, realm)
        print(f"Deactivated organization {realm.name!r} ({realm.string_id!r})")


def cmd_reactivate_realm(args: argparse.Namespace) -> None:
    from palaver.actions.realm_lifecycle import do_reactivate_realm
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        do_reactivate_realm(session, realm)
        print(f"Reactivated organization {realm.name!r} ({realm.string_id!r})")


def register(add: AddCommand) -> None:
    listing = add("list-realms", cmd_list_realms, "list the organizations on this server")
    listing.add_argument("--json", action="store_true", help="print JSON")
    for name, command, text in (
        ("deactivate-realm", cmd_deactivate_realm, "deactivate an organization (everyone is logged out)"),
        ("reactivate-realm", cmd_reactivate_realm, "reactivate a deactivated organization"),
    ):
        p = add(name, command, text)
        p.add_argument("--realm", required=True, help='organization string ID ("" for the root domain)')
