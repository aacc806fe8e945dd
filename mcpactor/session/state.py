"""Typed per-session state: one value per class, ``session.state``.

The layers above the session keep what they need per session here, each under a
class of its own (the server's :class:`~mcpactor.server.context.ServerSessionState`,
the OAuth resource server's :class:`SessionAuth`), so reading it is typed and no two
layers can collide on a string key. The session layer never looks inside.

:class:`SessionAuth` lives here rather than in :mod:`mcpactor.auth` because the
server reads it on every ``ctx.auth`` and must not import the OAuth package (and its
client flow) to do so; only :class:`~mcpactor.auth.resource_server.ResourceServer`
writes it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

if TYPE_CHECKING:
    from mcpactor.protocol.jsonrpc import RequestId

__all__ = ["SessionAuth", "SessionState"]

T = TypeVar("T")
#: The token type of :class:`SessionAuth` (the auth layer's ``AccessToken``, which this
#: layer does not import).
TokenT = TypeVar("TokenT")


class SessionState:
    """A small registry keyed by type: ``state.get(Kind)``, ``state.put(value)``,
    ``state.setdefault(Kind, factory)``. Cost: one dict lookup, as a string key was."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[type[Any], Any] = {}

    def get(self, kind: type[T]) -> T | None:
        """The value kept under ``kind``, or None."""
        value: T | None = self._values.get(kind)
        return value

    def put(self, value: object) -> None:
        """Keep ``value`` under its own class (replacing the previous one)."""
        self._values[type(value)] = value

    def setdefault(self, kind: type[T], factory: Callable[[], T]) -> T:
        """The value kept under ``kind``, made by ``factory()`` and kept on first use."""
        value: T | None = self._values.get(kind)
        if value is None:
            value = self._values[kind] = factory()
        return value

    def __contains__(self, kind: type[Any]) -> bool:
        return kind in self._values

    def __repr__(self) -> str:
        return f"SessionState({', '.join(k.__name__ for k in self._values)})"


#: How many request ids :attr:`SessionAuth.by_request` remembers (oldest forgotten first).
REQUEST_TOKENS_MAX = 4096


@attrs.define
class SessionAuth(Generic[TokenT]):
    """[auth] The OAuth tokens of one session: the one it was opened with (replaced by
    a later one of the same principal, which may carry more scopes after a step-up)
    and the one each recent request came with."""

    #: The token of the request that opened the session (None: opened without one).
    owner: TokenT | None = None
    #: Request id → the token of the HTTP request that carried it (bounded).
    by_request: OrderedDict[RequestId, TokenT] = attrs.Factory(OrderedDict)

    def note(self, request_id: RequestId, token: TokenT) -> None:
        """Remember that ``token`` carried request ``request_id``."""
        table = self.by_request
        table[request_id] = token
        table.move_to_end(request_id)
        while len(table) > REQUEST_TOKENS_MAX:
            table.popitem(last=False)

    def token_for(self, request_id: RequestId | None) -> TokenT | None:
        """The token of request ``request_id``, else the session's latest."""
        if request_id is not None:
            mine = self.by_request.get(request_id)
            if mine is not None:
                return mine
        return self.owner
