"""The ``palaver`` commands for email: ``outbox`` and ``email-gateway``."""

from __future__ import annotations

import argparse
import json
import sys
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from palaver.commands.common import AddCommand, CliError, settings_from_args


def outbox_entries(directory: Path) -> list[dict[str, Any]]:
    """The .eml files of the outbox directory, oldest first, with their main headers."""
    entries: list[dict[str, Any]] = []
    if not directory.is_dir():
        return entries
    parser = BytesParser(policy=policy.default)
    for path in sorted(directory.glob("*.eml")):
        with path.open("rb") as f:
            headers = parser.parse(f, headersonly=True)
        entries.append(
            {
                "file": str(path),
                "date": str(headers.get("Date", "")),
                "to": str(headers.get("To", "")),
                "subject": str(headers.get("Subject", "")),
            }
        )
    return entries


def readable_email(path: Path) -> str:
    """Main headers and the decoded plain-text part (the raw file may be quoted-printable)."""
    with path.open("rb") as f:
        message = BytesParser(policy=policy.default).parse(f)
    lines = [
        f"{name}: {message[name]}" for name in ("Date", "From", "To", "Reply-To", "Subject") if message[name]
    ]
    body = message.get_body(preferencelist=("plain",))
    text = body.get_content() if body is not None and hasattr(body, "get_content") else ""
    return "\n".join(lines) + "\n\n" + str(text)


def _print_queue(settings: Any, *, as_json: bool) -> None:
    from palaver.bootstrap import open_services
    from palaver.lib.email.outbox import recent_emails

    with open_services(settings) as services, services.db.session() as session:
        rows = [
            {
                "id": r.id,
                "to": r.to_address,
                "template": r.template,
                "created": r.created.isoformat(),
                "attempts": r.attempts,
                "status": "sent" if r.sent_at else "failed" if r.failed else "queued",
                "next_attempt_at": r.next_attempt_at.isoformat(),
                "last_error": r.last_error,
            }
            for r in recent_emails(session)
        ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        error = f"  ({r['last_error']})" if r["last_error"] and r["status"] != "sent" else ""
        print(f"{r['id']:>6}  {r['status']:<6}  {r['attempts']:>2}  {r['to']:<32}  {r['template']}{error}")


def cmd_outbox(args: argparse.Namespace) -> None:
    from palaver.lib.email.transport import outbox_dir

    settings = settings_from_args(args)
    if args.queue:
        _print_queue(settings, as_json=args.json)
        return
    entries = outbox_entries(outbox_dir(settings))
    if args.show is not None:
        match = [e for e in entries if Path(e["file"]).name.startswith(args.show) or e["file"] == args.show]
        if not match:
            print(f"palaver: error: no email {args.show!r} in the outbox", file=sys.stderr)
            raise SystemExit(1)
        sys.stdout.write(readable_email(Path(match[-1]["file"])))
        return
    if args.json:
        print(json.dumps(entries, indent=2))
        return
    if not entries:
        print(f"The outbox ({outbox_dir(settings)}) is empty.")
        return
    for e in entries:
        print(f"{Path(e['file']).name}  {e['to']:<32}  {e['subject']}")


def cmd_email_gateway(args: argparse.Namespace) -> None:
    from palaver.bootstrap import open_services
    from palaver.lib.email.incoming import recipient_addresses
    from palaver.workers.email_gateway import make_controller, receive

    settings = settings_from_args(args)
    if args.stdin:
        raw = sys.stdin.buffer.read()
        recipients = [args.recipient] if args.recipient else recipient_addresses(raw)
        if not recipients:
            raise CliError("no recipient: pass --recipient (Postfix: ${original_recipient})")
        with open_services(settings) as services:
            delivered, refused = receive(services, raw, recipients)
        if refused and not delivered:
            # Mail servers bounce on exit code 67 (EX_NOUSER) and retry on 75 (EX_TEMPFAIL).
            print(f"palaver: error: {refused[0]}", file=sys.stderr)
            raise SystemExit(75 if refused[0].startswith("4") else 67)
        return
    if args.port is None:
        raise CliError("give --port N to listen, or --stdin to read one message")
    import signal
    import threading

    with open_services(settings) as services:
        controller = make_controller(services, args.host, args.port, lmtp=args.lmtp)
        controller.start()
        kind = "LMTP" if args.lmtp else "SMTP"
        print(f"Email gateway ({kind}) listening on {args.host}:{args.port}", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        finally:
            controller.stop()


def register(add: AddCommand) -> None:
    outbox = add("outbox", cmd_outbox, "list emails written to <data_dir>/outbox/ (no smtp_url set)")
    outbox.add_argument("--json", action="store_true", help="print JSON")
    outbox.add_argument(
        "--queue", action="store_true", help="the delivery queue: queued, sent, failed emails"
    )
    outbox.add_argument(
        "--show", metavar="NAME", help="print one email's headers and text (file name or prefix)"
    )

    gateway = add("email-gateway", cmd_email_gateway, "post incoming email as messages (SMTP/LMTP or stdin)")
    gateway.add_argument("--port", type=int, help="listen for SMTP (or LMTP) on this port")
    gateway.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    gateway.add_argument("--lmtp", action="store_true", help="speak LMTP instead of SMTP")
    gateway.add_argument(
        "--stdin", action="store_true", help="read one message from stdin (mail server pipe)"
    )
    gateway.add_argument("--recipient", help="with --stdin: the address it was delivered to")
