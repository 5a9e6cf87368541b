"""The ``palaver`` commands for email: ``outbox`` and ``email-gateway``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

AddCommand = Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]


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


def cmd_outbox(args: argparse.Namespace) -> None:
    from palaver.cli import _settings
    from palaver.lib.email.transport import outbox_dir

    settings = _settings(args)
    entries = outbox_entries(outbox_dir(settings))
    if args.show is not None:
        match = [e for e in entries if Path(e["file"]).name.startswith(args.show) or e["file"] == args.show]
        if not match:
            print(f"palaver: error: no email {args.show!r} in the outbox", file=sys.stderr)
            raise SystemExit(1)
        sys.stdout.write(Path(match[-1]["file"]).read_text(errors="replace"))
        return
    if args.json:
        print(json.dumps(entries, indent=2))
        return
    if not entries:
        print(f"The outbox ({outbox_dir(settings)}) is empty.")
        return
    for e in entries:
        print(f"{Path(e['file']).name}  {e['to']:<32}  {e['subject']}")


def register_email_commands(add: AddCommand) -> None:
    outbox = add("outbox", cmd_outbox, "list emails written to <data_dir>/outbox/ (no smtp_url set)")
    outbox.add_argument("--json", action="store_true", help="print JSON")
    outbox.add_argument("--show", metavar="NAME", help="print one email (file name or its prefix)")
