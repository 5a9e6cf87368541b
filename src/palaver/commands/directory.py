"""Sign-in commands: ``palaver sync-ldap`` (the company directory's people into an
organization's accounts) and ``palaver reset-2fa`` (for someone who lost their authenticator)."""

from __future__ import annotations

import argparse

from palaver.commands.common import AddCommand, CliError, require_realm, require_user, settings_from_args


def cmd_sync_ldap(args: argparse.Namespace) -> None:
    from palaver.actions.external_logins import do_sync_directory
    from palaver.bootstrap import open_services
    from palaver.lib import ldap_directory
    from palaver.lib.realm import realm_email_host
    from palaver.lib.storage import make_storage

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
            storage=make_storage(settings),
        )
    if report.empty_directory:
        raise CliError(
            "the directory returned no entries, so nobody was deactivated: "
            "check user_search_base and user_filter in [auth.ldap]"
        )
    print(
        f"{len(people)} directory entries: {report.linked} accounts linked, {report.updated} updated, "
        f"{len(report.deactivated)} deactivated, {len(report.reactivated)} reactivated"
    )
    for email in report.deactivated:
        why = "disabled in the directory" if email in report.disabled else "no longer in the directory"
        print(f"deactivated {email} ({why})")
    for email in report.reactivated:
        print(f"reactivated {email} (back in the directory)")


def cmd_reset_2fa(args: argparse.Namespace) -> None:
    from palaver.actions.two_factor import do_disable_two_factor
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        user = require_user(session, args.realm, args.email)
        if do_disable_two_factor(session, user):
            print(
                f"Two-factor authentication turned off for {user.delivery_email}; they can set it up again."
            )
        else:
            print(f"{user.delivery_email} had no two-factor authentication")


def register(add: AddCommand) -> None:
    p = add("sync-ldap", cmd_sync_ldap, "update accounts from the LDAP directory (names, emails, departures)")
    p.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    reset = add("reset-2fa", cmd_reset_2fa, "turn off a user's two-factor authentication (a lost phone)")
    reset.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    reset.add_argument("--email", required=True, help="the user's (real) email address")
