"""Every bad request gets the spec's status code, and another session keeps working."""

from __future__ import annotations

import orjson
import trio
from http_support import (
    LATEST,
    RawClient,
    init_body,
    make_server,
    request_body,
    running_app,
    wait_until,
)

from mcpactor import connect_http

TIMEOUT = 15
PING = request_body(7, "ping")


async def _error_code(body: bytes) -> int:
    return int(orjson.loads(body)["error"]["code"])


async def test_bad_inputs_get_their_status_codes_while_another_session_works() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(max_body_size=10_000) as (app, url), connect_http(url, mode="legacy") as good:
            raw = RawClient(url)
            await raw.initialize()
            sid = raw.session_id
            assert sid is not None

            async def check(status: int, method: str, body: bytes | None,
                            headers: list[tuple[str, str]], code: int | None = None) -> None:
                got, _, data = await raw.simple(method, body, headers)
                assert got == status, (method, headers, got, data)
                if code is not None:
                    assert await _error_code(data) == code
                # The healthy session is unaffected by each refusal.
                assert (await good.call_tool("echo", {"text": "ok"})).content[0].text == "ok"

            h = raw.headers
            await check(415, "POST", PING, h(content_type="text/plain"))
            await check(406, "POST", PING, h(accept="application/json"))
            await check(406, "POST", PING, h(accept=""))
            await check(406, "GET", None, h(accept="application/json"))
            await check(400, "POST", b"{not json", h(), code=-32700)
            await check(400, "POST", b"[]", h(), code=-32600)
            await check(400, "POST", b'{"jsonrpc":"1.0","id":1,"method":"ping"}', h(), code=-32600)
            await check(400, "POST", b"[" + PING + b"]", h(), code=-32600)  # batch in 2025-11-25
            await check(413, "POST", b'{"pad":"' + b"x" * 20_000 + b'"}', h())
            await check(404, "POST", PING, h(mcp_session_id="no-such-session"))
            await check(400, "POST", PING, h(mcp_session_id=""))
            # A version we do not speak: the negotiable -32022 (with our list), either era.
            await check(400, "POST", PING, h(mcp_protocol_version="1999-01-01"), code=-32022)
            await check(403, "POST", PING, h(origin="http://evil.example.com"))
            await check(421, "POST", PING, h(host="evil.example.com"))
            await check(405, "PUT", PING, h())
            await check(400, "GET", None, h(accept="text/event-stream", last_event_id="999-1"))
            await check(400, "GET", None, [("accept", "text/event-stream")])
            await check(404, "DELETE", None, h(mcp_session_id="gone"))
            got, _, _ = await raw.simple("POST", PING, h(mcp_session_id="a b"))
            assert got == 404
            resp = await raw.pool.request("GET", url + "/nowhere", h())
            assert resp.status == 404
            await resp.read()
            await resp.aclose()
            # A foreign Origin or Host on initialize (DNS rebinding).
            await check(403, "POST", init_body(), [("accept", "application/json, text/event-stream"),
                                                   ("content-type", "application/json"),
                                                   ("origin", "http://evil.example.com")])
            await check(421, "POST", init_body(), [("accept", "application/json, text/event-stream"),
                                                   ("content-type", "application/json"),
                                                   ("host", "evil.example.com")])
            # The session that sent all that garbage is still fine too.
            status, _, _ = await raw.simple("POST", b'{"jsonrpc":"2.0","method":"notifications/x"}')
            assert status == 202
            assert len(app.sessions) == 2
            await raw.aclose()


async def test_in_flight_limit() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(max_in_flight=2) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            call = {"name": "hang", "arguments": {}}
            held = [await raw.post(request_body(i, "tools/call", call)) for i in (1, 2)]
            assert [r.status for r in held] == [200, 200]
            status, _, _ = await raw.simple("POST", request_body(3, "tools/call", call))
            assert status == 429
            # Cancelling one frees a slot.
            status, _, _ = await raw.simple("POST", orjson.dumps({
                "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1},
            }))
            assert status == 202
            with trio.fail_after(5):
                while True:
                    status, _, _ = await raw.simple("POST", request_body(4, "ping"))
                    if status == 200:
                        break
                    await trio.sleep(0.02)
            for r in held:
                await r.aclose()
            await raw.aclose()


async def test_initialize_needs_no_session_and_error_leaves_none() -> None:
    with trio.fail_after(TIMEOUT):
        server = make_server()
        async with running_app(server) as (app, url):
            raw = RawClient(url)
            bad = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            status, headers, body = await raw.simple("POST", bad)
            assert status == 200 and "mcp-session-id" not in headers
            assert await _error_code(body) == -32602
            await wait_until(lambda: not app.sessions and not server.sessions)
            # A request before initialize, without a session id: 400.
            status, _, _ = await raw.simple("POST", PING)
            assert status == 400
            result = await raw.initialize()
            assert result["protocolVersion"] == LATEST
            await raw.aclose()
