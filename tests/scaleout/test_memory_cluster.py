"""Two workers in one process sharing a MemoryState (the same cluster code as Redis):
a request for a session of the other worker is relayed to it; when that worker stops,
the session is taken over and goes on."""

from __future__ import annotations

import json
from functools import partial

import trio

from mcpactor import Server
from mcpactor.scaleout.cluster import ClusterOptions
from mcpactor.scaleout.state import MemoryState
from mcpactor.transports.http_client import HttpPool
from mcpactor.transports.http_serve import serve_http

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-06-18"}


def _server(name: str) -> Server:
    server = Server(name)

    @server.tool()
    def where() -> str:
        """The worker's name."""
        return name

    return server


async def _post(pool: HttpPool, url: str, body: dict[str, object], sid: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = dict(HEADERS)
    if sid is not None:
        headers["mcp-session-id"] = sid
    resp = await pool.request("POST", url, list(headers.items()), json.dumps(body).encode())
    data = await resp.read()
    return resp.status, {k.lower(): v for k, v in resp.headers.items()}, data


async def test_relay_then_takeover() -> None:
    state = MemoryState()
    options = ClusterOptions(heartbeat=0.05, worker_ttl=0.3, session_ttl=60)
    with trio.fail_after(20):
        pool = HttpPool()
        async with trio.open_nursery() as nursery:
            a_scope = trio.CancelScope()

            async def serve_a(task_status: trio.TaskStatus[str]) -> None:
                with a_scope:
                    await serve_http(_server("a"), port=0, quiet=True, redis=state,
                                     scaleout=options, task_status=task_status)

            url_a = await nursery.start(serve_a)
            url_b = await nursery.start(partial(serve_http, _server("b"), port=0, quiet=True,
                                                redis=state, scaleout=options))
            status, headers, _ = await _post(pool, url_a, {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}})
            assert status == 200
            sid = headers["mcp-session-id"]
            await _post(pool, url_b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "where", "arguments": {}}}
            # Sent to b, answered by a (the owner), through the shared state.
            status, _, body = await _post(pool, url_b, call, sid)
            assert status == 200 and b'"text":"a"' in body
            # a stops: the session moves to b, which answers from now on.
            a_scope.cancel()
            await trio.sleep(0.1)
            call["id"] = 3
            status, _, body = await _post(pool, url_b, call, sid)
            assert status == 200, body
            assert b'"text":"b"' in body
            # A session nobody has: the spec's 404.
            status, _, _ = await _post(pool, url_b, call, "no-such-session")
            assert status == 404
            await pool.aclose()
            nursery.cancel_scope.cancel()
