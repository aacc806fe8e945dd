"""Client code a trace can name, so that ``mcpactor replay`` can run it again.

A server trace names the server (``module:attr`` of a :class:`~mcpactor.server.Server`);
a client trace names the code that drove the session: an ``async def main(client)``, or
a :class:`ClientScript` when the session also needs handlers (sampling, elicitation,
roots) or connect options. Recording::

    async with connect_stdio(cmd, trace="run.jsonl", entry_point="app:main") as client:
        await main(client)

Replaying (``mcpactor replay run.jsonl``) connects the same code to the recorded server
on a virtual clock and checks that it sends what it sent then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from mcpactor.client.client import Client, ClientHandlers
from mcpactor.session.limits import Limits
from mcpactor.session.tracker import Timeout

__all__ = ["ClientScript", "as_client_script"]


@attrs.frozen
class ClientScript:
    """``main(client)`` and what shapes its session besides the server's answers.

    ``handlers`` answer the server's requests; ``client_info`` and ``protocol_version``
    default to what the recorded ``initialize`` said (None), ``timeout`` is the
    client's default request timeout. Use the same values when recording (pass them to
    ``connect_*``: :meth:`connect_options` gives them) as the replay will.
    """

    main: Callable[[Client], Awaitable[Any]]
    handlers: ClientHandlers | None = None
    client_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    timeout: Timeout | float | None = None
    limits: Limits = Limits()  # noqa: RUF009 - frozen, shared safely

    def connect_options(self) -> dict[str, Any]:
        """The keyword arguments of ``connect_*`` this script's session needs."""
        options: dict[str, Any] = {"handlers": self.handlers, "timeout": self.timeout,
                                   "limits": self.limits}
        if self.client_info is not None:
            options["client_info"] = self.client_info
        if self.protocol_version is not None:
            options["protocol_version"] = self.protocol_version
        return options


def as_client_script(obj: object) -> ClientScript | None:
    """``obj`` as a :class:`ClientScript` (an async callable becomes its ``main``), or
    None when it is neither."""
    if isinstance(obj, ClientScript):
        return obj
    if callable(obj):
        return ClientScript(main=obj)
    return None
