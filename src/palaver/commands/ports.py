"""Checking the listening port before start-up does any work."""

from __future__ import annotations

import errno
import socket

from palaver.commands.common import CliError
from palaver.config import Settings


def ensure_port_free(settings: Settings) -> None:
    """Fail in one line if the address is taken, before migrations or the demo realm run.

    Binding with SO_REUSEADDR as uvicorn does means a port in TIME_WAIT after a restart
    still counts as free; only a live listener is reported.
    """
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((settings.host, settings.port))
        except OSError as e:
            bind = f"[{settings.host}]" if ":" in settings.host else settings.host
            if e.errno == errno.EADDRINUSE:
                raise CliError(
                    f"port {settings.port} on {bind} is already in use (another Palaver running?);"
                    " choose another with --port"
                ) from None
            raise CliError(f"cannot listen on {bind}:{settings.port}: {e.strerror or e}") from None
