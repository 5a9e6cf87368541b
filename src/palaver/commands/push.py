"""``palaver push-register``: register this server with Zulip's push notification service."""

from __future__ import annotations

import argparse
import secrets
import uuid
from urllib.parse import urlsplit

from palaver.commands.common import AddCommand, CliError, settings_from_args

# Zulip's mobile push notification service, the one its official apps receive from.
DEFAULT_SERVICE_URL = "https://push.zulipchat.com"
TERMS = (
    "Zulip's mobile push notification service is run by Kandra Labs under its Terms of Service\n"
    "(https://zulip.com/policies/terms) and Privacy Policy (https://zulip.com/policies/privacy).\n"
    "Free for small organizations and for communities it sponsors; larger organizations need a\n"
    "plan (https://zulip.com/plans/#self-hosted). What leaves this server: its hostname and the\n"
    "contact email below, each organization's name, URL and a UUID, this server's version,\n"
    "the tokens apps register (sealed by the app to the service's key) and each notification's\n"
    "ciphertext, which only the receiving device can read. Message content never leaves in\n"
    "the clear."
)


def cmd_push_register(args: argparse.Namespace) -> None:
    from palaver.actions.push_service import do_save_push_registration
    from palaver.bootstrap import open_services
    from palaver.lib.push import relay_client
    from palaver.lib.push_service import (
        PushServiceClient,
        PushServiceError,
        ServiceCredentials,
        get_registration,
    )
    from palaver.workers.push import report_realms

    settings = settings_from_args(args)
    url = (args.url or settings.push_service_url or DEFAULT_SERVICE_URL).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"--url must be an http:// or https:// URL, not {url!r}")
    if not args.agree_to_terms_of_service:
        print(TERMS)
        raise CliError("read the terms above; registering needs --agree-to-terms-of-service")
    hostname = args.hostname or urlsplit(settings.external_url).netloc
    if not args.contact_email or "@" not in args.contact_email:
        raise CliError("--contact-email: the service writes to this address about this server")
    with open_services(settings) as services:
        with services.db.session() as session:
            existing = get_registration(session)
            # Registering again with the same service keeps the identity (it updates
            # hostname and contact email there); another service gets a new one.
            if existing is not None and existing.url == url:
                server_uuid, server_key = existing.server_uuid, existing.server_key
            else:
                server_uuid, server_key = str(uuid.uuid4()), secrets.token_hex(32)
        credentials = ServiceCredentials(url=url, server_uuid=server_uuid, server_key=server_key)
        with relay_client() as http:
            client = PushServiceClient(credentials, http)
            try:
                created = client.register_server(hostname, args.contact_email)
            except PushServiceError as e:
                what = "could not register with the push service" if e.retry else "the push service refused"
                raise CliError(f"{what}: {e}") from None
            with services.db.session() as session:
                do_save_push_registration(
                    session,
                    url=url,
                    server_uuid=server_uuid,
                    server_key=server_key,
                    hostname=hostname,
                    contact_email=args.contact_email,
                )
            print(f"{'Registered' if created else 'Updated the registration of'} {hostname} with {url}.")
            try:
                answers = report_realms(services, client)
            except PushServiceError as e:
                print(f"Reporting the organizations failed ({e}); the server retries daily.")
                answers = {}
    for realm_uuid, answer in sorted(answers.items()):
        state = "can push" if answer.get("can_push") else "cannot push (see the service's plans)"
        print(f"  organization {realm_uuid}: {state}")
    if settings.push_service_url != url:
        print(f'Now set push_service_url = "{url}" in the configuration and restart the server.')


def register(add: AddCommand) -> None:
    cmd = add(
        "push-register",
        cmd_push_register,
        "register this server with Zulip's mobile push notification service",
    )
    cmd.add_argument("--contact-email", help="who the service contacts about this server (required)")
    cmd.add_argument("--hostname", help="this server's public hostname (default: from external_url)")
    cmd.add_argument("--url", help=f"the service (default: push_service_url, else {DEFAULT_SERVICE_URL})")
    cmd.add_argument(
        "--agree-to-terms-of-service",
        action="store_true",
        help="accept the service's terms (printed when this is missing)",
    )
