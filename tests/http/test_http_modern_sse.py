"""2026-07-28 over Streamable HTTP with every answer an SSE stream
(``json_response=False``, ``--sse-response``): an error answer still carries the HTTP
status the revision gives it (404 for -32601, 400 for -32021), as JSON; a result and a
call that sends progress are SSE streams."""

from __future__ import annotations

import orjson
import trio

from mcpactor import Context, Server
from mcpactor.transports.http_client import HttpPool
from mcpactor.transports.http_serve import serve_http

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def _server() -> Server:
    server = Server("sse-server", version="1.0.0")

    @server.tool()
    async def hello() -> str:
        """A plain result."""
        return "hi"

    @server.tool()
    async def needs_sampling(ctx: Context) -> str:
        """Asks the model: -32021 for a client that did not declare sampling."""
        await ctx.sample("x", max_tokens=5)
        return "sampled"

    return server


async def _post(pool: HttpPool, url: str, method: str, params: dict[str, object],
                name: str | None = None) -> tuple[int, str, bytes]:
    headers = [("accept", "application/json, text/event-stream"),
               ("content-type", "application/json"), ("mcp-protocol-version", "2026-07-28"),
               ("mcp-method", method)]
    if name is not None:
        headers.append(("mcp-name", name))
    body = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": method,
                         "params": {**params, "_meta": META}})
    resp = await pool.request("POST", url, headers, body)
    data = await resp.read()
    await resp.aclose()
    return resp.status, resp.content_type, data


async def test_errors_keep_their_status_when_answers_are_sse() -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(lambda task_status: serve_http(
                _server(), port=0, quiet=True, json_response=False, task_status=task_status))
            pool = HttpPool()
            try:
                status, ctype, body = await _post(pool, url, "ping", {})
                assert (status, ctype) == (404, "application/json")
                assert orjson.loads(body)["error"]["code"] == -32601
                status, ctype, body = await _post(
                    pool, url, "tools/call", {"name": "needs_sampling", "arguments": {}},
                    "needs_sampling")
                assert (status, ctype) == (400, "application/json")
                error = orjson.loads(body)["error"]
                assert error["code"] == -32021 and orjson.loads(body)["id"] == 7
                status, ctype, body = await _post(
                    pool, url, "tools/call", {"name": "hello", "arguments": {}}, "hello")
                assert (status, ctype) == (200, "text/event-stream")
                assert b'"text":"hi"' in body
            finally:
                await pool.aclose()
            nursery.cancel_scope.cancel()
