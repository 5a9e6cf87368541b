"""Subcommands of ``palaver`` beyond serving and account creation, one module per concern.

``cli.py`` builds the parser and calls ``register_commands`` with its ``add`` helper;
each module here registers its own subcommands.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Protocol


class AddCommand(Protocol):
    def __call__(
        self,
        name: str,
        func: Callable[[argparse.Namespace], None],
        help_text: str,
        aliases: Sequence[str] = (),
    ) -> argparse.ArgumentParser: ...


def common_options() -> argparse.ArgumentParser:
    """``--config``, ``--database-url`` and ``--data-dir``, for the top parser and every subcommand.

    SUPPRESS leaves an option out of the namespace unless given, so a value given before
    the subcommand is not overwritten by the subcommand's empty default.
    """
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--config", default=argparse.SUPPRESS, help="TOML configuration file (default: $PALAVER_CONFIG)"
    )
    parent.add_argument("--database-url", default=argparse.SUPPRESS, help="override the database URL")
    parent.add_argument("--data-dir", default=argparse.SUPPRESS, help="override the data directory")
    return parent


def register_commands(add: AddCommand) -> None:
    from palaver.commands import accounts, portability, realms, retention

    accounts.register(add)
    realms.register(add)
    portability.register(add)
    retention.register(add)
