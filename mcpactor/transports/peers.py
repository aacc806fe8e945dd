"""Who a client is, for per-address caps: its host, or its /64 for IPv6.

The built-in server's connection table and the HTTP app's session table both count
what one address holds (``max_connections_per_peer``, ``max_sessions_per_peer``).
"""

from __future__ import annotations

import ipaddress
from typing import Any

__all__ = ["peer_key", "peer_of_scope"]


def peer_key(addr: tuple[str, int] | None) -> str:
    """The address a client counts against: the host, or its /64 for IPv6 (one
    subscriber usually has a whole /64; an IPv4-mapped address is its IPv4 one); ""
    when unknown."""
    if addr is None:
        return ""
    host = addr[0]
    if ":" not in host:
        return host
    try:
        ip = ipaddress.IPv6Address(host.partition("%")[0])
    except ValueError:
        return host
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def peer_of_scope(scope: Any) -> str:
    """:func:`peer_key` of an ASGI scope's ``client`` ("" when the server gives none)."""
    client = scope.get("client") if isinstance(scope, dict) else None
    if isinstance(client, (tuple, list)) and len(client) >= 2:
        return peer_key((str(client[0]), int(client[1])))
    return ""
