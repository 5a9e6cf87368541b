"""The operator's tools reuse the CLI fixtures of tests/test_cli.py."""

from tests.test_cli import cli, cli_env, cli_realm

__all__ = ["cli", "cli_env", "cli_realm"]
