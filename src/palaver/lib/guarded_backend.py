"""httpcore's network backend for URLs users chose: it connects only to an address the policy
of ``lib/fetch.py`` allows, the very address it checked. Used by the link-preview fetcher and
the outgoing webhooks' transport (``lib/guarded_http.py``); imported with their first
connection, so httpcore is not loaded before."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

import httpcore

from palaver.lib.addresses import is_public_address


class AddressRefusedError(httpcore.ConnectError):
    """The name resolved only to addresses the policy refuses (at the moment of connecting)."""


class GuardedBackend(httpcore.SyncBackend):
    """Connects only to addresses the policy allows, checking the address actually used."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise httpcore.ConnectError(f"cannot resolve {host}") from e
        for _family, _type, _proto, _name, sockaddr in infos:
            address = str(sockaddr[0])
            if not self.allow_private and not is_public_address(address):
                continue
            # Connect to the checked address itself; TLS still verifies the host name.
            return super().connect_tcp(address, port, timeout, local_address, socket_options)
        raise AddressRefusedError(f"{host} has no address Palaver may connect to")
