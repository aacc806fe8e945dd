"""Our HTTP client against our HTTP server (hypercorn on 127.0.0.1), end to end."""

from __future__ import annotations

from typing import Any

import orjson
import trio
from http_support import (
    LATEST,
    RawClient,
    make_server,
    messages,
    read_events,
    request_body,
    running_app,
    wait_until,
)

from mcpactor import ClientHandlers, connect_http, connect_sse
from mcpactor.protocol.types import CreateMessageResult, TextContent
from mcpactor.transports.http_client import HttpPool

TIMEOUT = 10


async def test_call_tools_with_progress_over_sse() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url), connect_http(url, mode="legacy") as client:
            assert client.protocol_version == LATEST
            assert len(app.sessions) == 1
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"
            seen: list[float] = []
            result = await client.call_tool(
                "count", {"n": 4, "delay": 0.01}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert result.content[0].text == "counted to 4"
            assert seen == [1, 2, 3, 4]


async def test_keep_alive_connections_are_reused() -> None:
    with trio.fail_after(TIMEOUT):
        pool = HttpPool()
        async with running_app() as (_, url), connect_http(url, pool=pool, mode="legacy") as client:
            for i in range(10):
                result = await client.call_tool("echo", {"text": str(i)})
                assert result.content[0].text == str(i)
            # initialize + POSTs share one connection; the GET stream holds another.
            assert pool.opened <= 3


async def test_sse_polling_resumes_on_the_client() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(retry_ms=50) as (_, url), connect_http(url, mode="legacy") as client:
            result = await client.call_tool("poll", {})
            assert result.content[0].text == "answered after the stream closed"


async def test_sse_polling_only_closes_streams_of_primed_clients() -> None:
    # Before 2025-11-25 there is no priming event, so the client could not resume: the
    # server keeps the stream open and answers on it. Same in stateless mode.
    with trio.fail_after(TIMEOUT):
        async with running_app(json_response=False) as (_, url):
            raw = RawClient(url)
            await raw.initialize("2025-06-18")
            resp = await raw.post(request_body(3, "tools/call", {"name": "poll", "arguments": {}}))
            events = await read_events(resp)
            await resp.aclose()
            assert all(e.data for e in events)  # no priming event
            assert [m["id"] for m in messages(events)] == [3]
            await raw.aclose()
        async with running_app(stateless=True) as (_, url), connect_http(url, mode="legacy") as client:
            assert (await client.call_tool("poll", {})).content[0].text.startswith("answered")


async def test_json_response_mode() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(json_response=True) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            status, headers, body = await raw.simple(
                "POST", request_body(2, "tools/call", {"name": "echo", "arguments": {"text": "j"}})
            )
            assert status == 200
            assert headers["content-type"] == "application/json"
            assert orjson.loads(body)["result"]["content"][0]["text"] == "j"
            await raw.aclose()
            async with connect_http(url, mode="legacy") as client:
                assert (await client.call_tool("echo", {"text": "k"})).content[0].text == "k"


async def _sample(params: Any, rc: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="42"), model="test-model"
    )


async def test_server_to_client_request_in_sse_and_json_modes() -> None:
    # In JSON mode the sampling request travels on the GET stream while the tools/call
    # POST waits for its JSON answer: the client must not block its writer on that POST.
    for json_mode in (False, True):
        with trio.fail_after(TIMEOUT):
            async with running_app(json_response=json_mode) as (_, url), connect_http(
                url, handlers=ClientHandlers(sampling=_sample), mode="legacy"
            ) as client:
                result = await client.call_tool("ask", {"prompt": "answer?"})
                assert result.content[0].text == "model said: 42", json_mode


async def test_stateless_mode() -> None:
    with trio.fail_after(TIMEOUT):
        server = make_server()
        async with running_app(server, stateless=True) as (app, url):
            async with connect_http(url, mode="legacy") as client:
                result = await client.call_tool("echo", {"text": "stateless"})
                assert result.content[0].text == "stateless"
                seen: list[float] = []
                await client.call_tool(
                    "count", {"n": 2, "delay": 0.01}, on_progress=lambda p, t, m: seen.append(p)
                )
                assert seen == [1, 2]
            raw = RawClient(url)
            status, headers, _ = await raw.simple("POST", request_body(1, "tools/list"))
            assert status == 200 and "mcp-session-id" not in headers
            status, _, _ = await raw.simple("GET", headers=[("accept", "text/event-stream")])
            assert status == 405
            await raw.aclose()
            # Every POST's session is gone once it is answered.
            await wait_until(lambda: not app.sessions and len(server.sessions) == 0)


async def test_batch_allowed_only_in_2025_03_26() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(json_response=False) as (_, url):
            raw = RawClient(url)
            await raw.initialize("2025-03-26")
            batch = b"[" + request_body(1, "ping") + b"," + request_body(2, "tools/list") + b"]"
            resp = await raw.post(batch)
            assert resp.status == 200
            got = messages(await read_events(resp))
            await resp.aclose()
            assert len(got) == 1 and sorted(m["id"] for m in got[0]) == [1, 2]
            await raw.aclose()


async def test_legacy_sse_transport_and_fallback() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url):
            base = url.rsplit("/", 1)[0]
            async with connect_sse(base + "/sse") as client:
                assert client.protocol_version == "2024-11-05"
                assert (await client.call_tool("echo", {"text": "old"})).content[0].text == "old"
                assert len(app.sessions) == 1
            # POST to the SSE URL is refused with a 4xx: the client falls back to GET /sse.
            async with connect_http(base + "/sse", mode="legacy") as client:
                assert (await client.call_tool("echo", {"text": "fb"})).content[0].text == "fb"
            await wait_until(lambda: not app.sessions)
