"""Passwords given to the CLI explicitly: from a file or standard input, never guessed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from palaver.commands.common import CliError


def add_password_options(parser: argparse.ArgumentParser, *, allow_none: bool) -> None:
    parser.add_argument(
        "--password-file", metavar="FILE", help="read the password from the first line of FILE"
    )
    parser.add_argument(
        "--password-stdin", action="store_true", help="read the password from the first line of stdin"
    )
    if allow_none:
        parser.add_argument(
            "--no-password", action="store_true", help="no password: the account logs in with its API key"
        )


def explicit_password(args: argparse.Namespace) -> str | None:
    """The password from ``--password-file``/``--password-stdin``, or None if neither was given."""
    sources = [
        name
        for name, given in (
            ("--password", getattr(args, "password", None) is not None),
            ("--password-file", getattr(args, "password_file", None) is not None),
            ("--password-stdin", getattr(args, "password_stdin", False)),
            ("--no-password", getattr(args, "no_password", False)),
        )
        if given
    ]
    if len(sources) > 1:
        raise CliError(f"give only one of {', '.join(sources)}")
    if getattr(args, "password_file", None) is not None:
        try:
            text = Path(args.password_file).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CliError(f"password file {args.password_file} is not UTF-8 text") from None
        line = text.splitlines()[0] if text else ""
    elif getattr(args, "password_stdin", False):
        line = sys.stdin.readline().rstrip("\r\n")
    else:
        return None
    if not line:
        raise CliError("password cannot be empty")
    return line
