"""Subcommands of ``palaver`` beyond serving and account creation, one module per concern.

``cli.py`` builds the parser and has each module here register its own subcommands with its
``add`` helper (``common.AddCommand``). Each command imports what it runs when it runs, so
``palaver --help``, ``migrate`` or a mistyped option do not pay for importing the whole
server (about twice the start-up time).
"""
