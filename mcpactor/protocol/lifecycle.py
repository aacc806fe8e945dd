"""The session lifecycle state machine and capability checks (sans-I/O)."""

from __future__ import annotations

import enum
from typing import Any


class Role(enum.Enum):
    """Which end of the session this is."""

    CLIENT = "client"
    SERVER = "server"

    @property
    def peer(self) -> Role:
        """The other end."""
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT


class State(enum.Enum):
    """Lifecycle phases, the same names for both roles.

    ``AWAITING_INIT``: nothing negotiated yet. ``INITIALIZING``: the initialize request
    was sent (client) or answered (server), the initialized notification not yet sent or
    received. ``OPERATING``: normal operation. ``CLOSED``: the session is over.
    """

    AWAITING_INIT = "awaiting_init"
    INITIALIZING = "initializing"
    OPERATING = "operating"
    CLOSED = "closed"


#: Always allowed, in any phase and either direction.
ALWAYS_ALLOWED = frozenset({"ping"})
#: Notifications a server may send before the client's initialized notification.
EARLY_SERVER_NOTIFICATIONS = frozenset(
    {"notifications/message", "notifications/progress", "notifications/cancelled"}
)


def may_receive_request(role: Role, state: State, method: str) -> str | None:
    """None when an inbound request is allowed now, else the reason it is not."""
    if method in ALWAYS_ALLOWED:
        return None
    if state is State.CLOSED:
        return "the session is closed"
    if role is Role.SERVER:
        if method == "initialize":
            if state is State.AWAITING_INIT:
                return None
            return "the session is already initialized"
        if state is State.AWAITING_INIT:
            return f"the session is not initialized: send initialize before {method}"
        # A client may send requests as soon as it has the initialize result, which
        # can be before our copy of its initialized notification is read.
        return None
    # Client: servers must not send requests (other than ping) before initialization.
    if state is not State.OPERATING:
        return f"the session is not initialized yet; {method} is not allowed"
    return None


def may_send_request(role: Role, state: State, method: str) -> str | None:
    """None when we may send this request now, else the reason we may not."""
    if method in ALWAYS_ALLOWED:
        return None
    if state is State.CLOSED:
        return "the session is closed"
    if role is Role.CLIENT:
        if method == "initialize":
            return None if state is State.AWAITING_INIT else "initialize was already sent"
        if state is not State.OPERATING:
            return f"cannot send {method} before initialization completes"
        return None
    if state is not State.OPERATING:
        return f"cannot send {method} before the client's initialized notification"
    return None


def may_send_notification(role: Role, state: State, method: str) -> str | None:
    """None when we may send this notification now, else the reason."""
    if state is State.CLOSED:
        return "the session is closed"
    if role is Role.CLIENT:
        if method == "notifications/initialized" or method == "notifications/cancelled":
            return None
        if state is not State.OPERATING:
            return f"cannot send {method} before initialization completes"
        return None
    if state is State.OPERATING or method in EARLY_SERVER_NOTIFICATIONS:
        return None
    return f"cannot send {method} before the client's initialized notification"


def has_capability(caps: dict[str, Any] | None, path: tuple[str, ...] | None) -> bool:
    """Whether a capabilities object (wire form) declares ``path``.

    ``("tools",)`` asks for the ``tools`` object; ``("resources", "subscribe")`` asks for
    a truthy ``subscribe`` flag inside ``resources``.
    """
    if path is None:
        return True
    if caps is None:
        return False
    node: Any = caps
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return node is not None and node is not False
