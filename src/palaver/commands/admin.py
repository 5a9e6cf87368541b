"""Organization-wide commands: reload web clients (deactivating organizations: commands/realms.py).

The events these send reach running servers as every command's do: through Redis
(``redis_url``), or else through the change log the server follows (``cache/change_log.py``).
"""

from __future__ import annotations

import argparse

from palaver.commands.common import AddCommand, require_realm, settings_from_args


def cmd_reload_clients(args: argparse.Namespace) -> None:
    from palaver.actions.web_reload import do_reload_web_clients
    from palaver.bootstrap import open_services

    with open_services(settings_from_args(args)) as services, services.db.session() as session:
        do_reload_web_clients(session, require_realm(session, args.realm), immediate=args.immediate)
        print(f"Web clients of {args.realm!r} asked to reload")


def register(add: AddCommand) -> None:
    reload_clients = add("reload-clients", cmd_reload_clients, "ask an organization's web clients to reload")
    reload_clients.add_argument("--realm", default="", help="organization string ID (default: root domain)")
    reload_clients.add_argument("--immediate", action="store_true", help="reload now, not at a quiet moment")
