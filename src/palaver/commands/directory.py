"""``palaver sync-ldap``: the company directory's people into an organization's accounts."""

from __future__ import annotations

import argparse

from palaver.commands.common import AddCommand, CliError, require_realm, settings_from_args


def cmd_sync_ldap(args: argparse.Namespace) -> None:
    from palaver.actions.external_logins import do_sync_directory
    from palaver.bootstrap import open_services
    from palaver.lib import ldap_directory
    from palaver.lib.realm import realm_email_host

    settings = settings_from_args(args)
    if settings.auth.ldap is None:
        raise CliError("no directory is configured: add an [auth.ldap] table to the configuration file")
    people = ldap_directory.all_people(settings.auth.ldap)
    with open_services(settings) as services, services.db.session() as session:
        realm = require_realm(session, args.realm)
        report = do_sync_directory(
            session,
            realm,
            people,
            provider=ldap_directory.PROVIDER,
            email_host=realm_email_host(settings, realm),
        )
    print(
        f"{len(people)} directory entries: {report.linked} accounts linked, {report.updated} updated, "
        f"{len(report.deactivated)} deactivated"
    )
    for email in report.deactivated:
        print(f"deactivated {email} (no longer in the directory)")


def register(add: AddCommand) -> None:
    p = add("sync-ldap", cmd_sync_ldap, "update accounts from the LDAP directory (names, emails, departures)")
    p.add_argument("--realm", default="", help="organization string ID (default: root domain)")
