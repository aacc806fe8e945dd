"""A scripted MCP client speaking raw JSON-RPC, for orderings no polite client makes.

Used by ``traces/record.py`` to record the race corpus and by the racy-handler test.
"""

from __future__ import annotations

from typing import Any

import orjson
import trio

from mcpactor.transports.memory import MemoryTransport

PROTOCOL = "2025-06-18"


def peer_pair() -> tuple[MemoryTransport, Peer]:
    """The server's transport and the scripted client holding the other end."""
    to_server, server_in = trio.open_memory_channel[bytes](1000)
    server_out, from_server = trio.open_memory_channel[bytes](1000)
    return MemoryTransport(server_out, server_in), Peer(to_server, from_server)


class Peer:
    """The client end of an in-memory pipe, driven message by message."""

    def __init__(
        self, out: trio.MemorySendChannel[bytes], inp: trio.MemoryReceiveChannel[bytes]
    ) -> None:
        self._out = out
        self._in = inp
        self.inbox: list[dict[str, Any]] = []

    async def send(self, *messages: dict[str, Any]) -> None:
        """Send messages back to back: all are queued before the server can run."""
        for m in messages:
            self._out.send_nowait(orjson.dumps(m))
        await trio.lowlevel.checkpoint()

    async def request(self, rid: Any, method: str, params: dict[str, Any] | None = None,
                      progress: Any = None) -> None:
        """Send a request (with a progress token when ``progress`` is given)."""
        await self.send(request_msg(rid, method, params, progress))

    async def call(self, rid: Any, tool: str, args: dict[str, Any] | None = None,
                   progress: Any = None) -> None:
        """Send tools/call."""
        await self.send(call_msg(rid, tool, args, progress))

    async def cancel(self, rid: Any, reason: str = "changed my mind") -> None:
        """Send notifications/cancelled."""
        await self.send(cancel_msg(rid, reason))

    async def answer(self, rid: Any, result: dict[str, Any]) -> None:
        """Answer a request the server sent us."""
        await self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    async def receive(self) -> dict[str, Any]:
        """The next message from the server."""
        data = await self._in.receive()
        msg: dict[str, Any] = orjson.loads(data)
        self.inbox.append(msg)
        return msg

    async def until(self, *, rid: Any = None, method: str | None = None) -> dict[str, Any]:
        """Receive until a response to ``rid`` or a message with ``method`` arrives."""
        while True:
            msg = await self.receive()
            if method is not None and msg.get("method") == method:
                return msg
            if rid is not None and msg.get("id") == rid and "method" not in msg:
                return msg

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        """The handshake: initialize, wait for the answer, initialized."""
        await self.request(0, "initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "race-peer", "version": "1.0"},
        })
        await self.until(rid=0)
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        """Disconnect (the server sees end of input)."""
        self._out.close()


def request_msg(rid: Any, method: str, params: dict[str, Any] | None = None,
                progress: Any = None) -> dict[str, Any]:
    """A request (with a progress token when ``progress`` is given)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = dict(params)
    if progress is not None:
        msg.setdefault("params", {})["_meta"] = {"progressToken": progress}
    return msg


def call_msg(rid: Any, tool: str, args: dict[str, Any] | None = None,
             progress: Any = None) -> dict[str, Any]:
    """A tools/call request."""
    return request_msg(rid, "tools/call", {"name": tool, "arguments": args or {}}, progress)


def cancel_msg(rid: Any, reason: str = "changed my mind") -> dict[str, Any]:
    """A notifications/cancelled notification."""
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": reason}}


def sampling_answer(text: str) -> dict[str, Any]:
    """A sampling/createMessage result."""
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "scripted"}


async def drain(peer: Peer) -> None:
    """Read until the server closes its side."""
    try:
        while True:
            await peer.receive()
    except (trio.EndOfChannel, trio.ClosedResourceError):
        pass
