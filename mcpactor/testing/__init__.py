"""Testing helpers for code built on mcpactor, public like :mod:`trio.testing`.

- :func:`open_client`: a :class:`~mcpactor.client.Client` connected to a
  :class:`~mcpactor.server.Server` over an in-memory pair, in the caller's Trio run;
- :func:`check_transport`: the checks every :class:`~mcpactor.transports.base.Transport`
  must pass (order, batches, both directions at once, clean and abrupt ends,
  cancellation); a new transport runs it against a pair of its ends;
- :mod:`mcpactor.testing.pytest_plugin`: pytest-trio fixtures, ``mcp_client`` on a
  virtual clock for the server of an ``mcp_server`` fixture.
"""

from __future__ import annotations

from mcpactor.testing.client import open_client
from mcpactor.testing.transport_check import TransportCheckFailed, check_transport
from mcpactor.transports.memory import memory_pair

__all__ = ["TransportCheckFailed", "check_transport", "memory_pair", "open_client"]
