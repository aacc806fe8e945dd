"""The HTTP app's table of sessions, by id and by the address that opened each.

It bounds sessions as the built-in server bounds connections: ``max_sessions`` in all,
``max_sessions_per_peer`` opened from one client address (an IPv6 /64; 0: no cap). A
new session past either makes room first by closing *idle* sessions, the least
recently used first: those of its own address past the per-address cap, else those of
the address holding the most; a session serving a request or an open stream (busy) is
never closed. Only when no session there is idle is the new one refused (503). So one
client opening sessions it never uses churns its own, instead of filling the table
and locking everyone out until the idle timeout (a closed session's client gets 404
and, as the spec says, opens a new one).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpactor.transports.http_session import HttpSession

__all__ = ["SessionTable"]


class SessionTable(dict[str, "HttpSession"]):
    """``{session id: HttpSession}``, with each address's sessions kept beside it.

    A plain mapping for everyone who reads it; entering (``table[sid] = hs``) and
    removing (``del``, ``pop``) keep the per-address index in step, ``hs.peer`` naming
    the address the session counts against.
    """

    def __init__(self, max_sessions: int, max_per_peer: int) -> None:
        super().__init__()
        self.max_sessions = max_sessions
        self.max_per_peer = max_per_peer
        #: Sessions by the address that opened them.
        self.peers: dict[str, dict[str, HttpSession]] = {}

    def __setitem__(self, sid: str, hs: HttpSession) -> None:
        old = self.get(sid)
        if old is not None:
            self._unindex(sid, old)
        super().__setitem__(sid, hs)
        self.peers.setdefault(hs.peer, {})[sid] = hs

    def __delitem__(self, sid: str) -> None:
        hs = self[sid]
        super().__delitem__(sid)
        self._unindex(sid, hs)

    def pop(self, sid: str, *default: HttpSession | None) -> HttpSession | None:  # type: ignore[override]
        """``dict.pop``, keeping the index in step."""
        if sid in self:
            hs = self[sid]
            del self[sid]
            return hs
        if default:
            return default[0]
        raise KeyError(sid)

    def _unindex(self, sid: str, hs: HttpSession) -> None:
        group = self.peers.get(hs.peer)
        if group is not None and group.get(sid) is hs:
            del group[sid]
            if not group:
                del self.peers[hs.peer]

    def room_for(self, peer: str) -> tuple[list[HttpSession], str | None]:
        """Before a session of ``peer`` enters: the idle sessions to close to make room
        (see the module), and the refusal when there is no room even so."""
        closing: list[HttpSession] = []
        cap = self.max_per_peer
        group = self.peers.get(peer)
        # "": an address the server did not give (nor a session taken over from
        # another worker): counted in all, never as one address.
        if cap and peer and group is not None and len(group) >= cap:
            victims = _least_recent_idle(group.values(), len(group) - cap + 1)
            if victims is None:
                return [], "too many sessions from this address"
            closing += victims
        over = len(self) - len(closing) - self.max_sessions + 1
        if over > 0:
            taken = {id(hs) for hs in closing}
            # The address holding the most sessions gives them up first.
            for _, members in sorted(((len(g), g) for g in self.peers.values()),
                                     key=lambda item: -item[0]):
                got = _least_recent_idle(
                    (hs for hs in members.values() if id(hs) not in taken), over)
                if got is not None:
                    closing += got
                    over = 0
                    break
            if over > 0:
                return [], "too many sessions"
        return closing, None


def _idle(hs: HttpSession) -> bool:
    """Whether closing ``hs`` interrupts nothing: no HTTP request or stream of it in
    progress, no request of it unanswered."""
    return hs.active_requests == 0 and not hs.request_streams and hs.session is not None


def _least_recent_idle(pool: Iterable[HttpSession], need: int) -> list[HttpSession] | None:
    """The ``need`` idle sessions of ``pool`` used least recently; None if fewer are idle."""
    idle = [hs for hs in pool if _idle(hs)]
    if len(idle) < need:
        return None
    return heapq.nsmallest(need, idle, key=_last_used)


def _last_used(hs: HttpSession) -> float:
    return hs.last_activity
