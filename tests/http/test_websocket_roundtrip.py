"""MCP over WebSocket: our client and our server, subprotocol ``mcp``, on 127.0.0.1."""

from __future__ import annotations

import pytest
import trio
import trio_websocket
from http_support import make_server, wait_until

from mcpactor import connect_websocket
from mcpactor.transports.websocket import serve_websocket

TIMEOUT = 10


async def test_websocket_round_trip() -> None:
    server = make_server()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve_websocket(server, port=0, quiet=True, task_status=task_status)
            )
            async with connect_websocket(url, mode="legacy") as client:
                assert client.protocol_version == "2025-11-25"
                assert (await client.call_tool("echo", {"text": "ws"})).content[0].text == "ws"
                seen: list[float] = []
                result = await client.call_tool(
                    "count", {"n": 3, "delay": 0.01}, on_progress=lambda p, t, m: seen.append(p)
                )
                assert result.content[0].text == "counted to 3"
                assert seen == [1, 2, 3]
                assert len(server.sessions) == 1
            await wait_until(lambda: not server.sessions)
            # Without the subprotocol, or from a foreign Origin, the handshake is refused.
            with pytest.raises(trio_websocket.HandshakeError):
                async with trio_websocket.open_websocket_url(url):
                    pass
            with pytest.raises(trio_websocket.HandshakeError):
                async with trio_websocket.open_websocket_url(
                    url, subprotocols=["mcp"], extra_headers=[(b"origin", b"http://evil.example")]
                ):
                    pass
            nursery.cancel_scope.cancel()
