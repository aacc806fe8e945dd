"""A client connected to a server in the same Trio run, over an in-memory pair."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.transports.memory import memory_pair

if TYPE_CHECKING:
    from mcpactor.client import Client
    from mcpactor.server import Server
    from mcpactor.tracing.tracer import Tracer


@asynccontextmanager
async def open_client(
    server: Server, *, server_tracer: Tracer | None = None, **options: Any
) -> AsyncIterator[Client]:
    """Serve one session of ``server`` and yield a client connected to it.

    ``options`` are those of :func:`mcpactor.connect_transport` (``handlers``,
    ``timeout``, ``tracer``, ...); ``server_tracer`` records the server's side (e.g. a
    :class:`~mcpactor.tracing.MemoryRecorder` to assert on). Both sessions run in the
    caller's Trio run, so a test under ``trio.testing.MockClock`` sees every timeout
    and sleep of both sides on virtual time. Leaving the block closes the client, then
    waits for the server's session to end.

    The client opens a handshake session (``mode="legacy"``) unless ``mode`` says
    otherwise: this helper serves one session; pass ``mode="auto"`` (or
    ``"2026-07-28"``) to exercise the stateless revision's requests on it instead.
    """
    from mcpactor.client import connect_transport

    options.setdefault("mode", "legacy")

    server_end, client_end = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(server_end, tracer=server_tracer))
        async with connect_transport(client_end, **options) as client:
            yield client
