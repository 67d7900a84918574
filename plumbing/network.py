"""What a host name or address means for what is sent to it."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an address, an IPv6 address in brackets) is this machine only:
    what is sent there never crosses a network."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
