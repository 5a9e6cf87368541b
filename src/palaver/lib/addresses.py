"""Which network addresses Palaver may connect to for a URL a user chose."""

from __future__ import annotations

import ipaddress


def is_public_address(address: str) -> bool:
    """Whether Palaver may connect to ``address`` for a user's URL: a global unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast
