"""Per-request answers (JSON unless the handler streams), and both HTTP servers."""

from __future__ import annotations

import socket

import orjson
import pytest
import trio
from http_support import RawClient, init_body, messages, read_events, request_body, running_app

from mcpactor import connect_http

TIMEOUT = 15


async def test_quick_answer_is_json_and_streaming_answer_is_sse() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url):
            raw = RawClient(url)
            await raw.initialize()
            status, headers, body = await raw.simple(
                "POST", request_body(2, "tools/call", {"name": "echo", "arguments": {"text": "q"}})
            )
            assert status == 200 and headers["content-type"] == "application/json"
            assert orjson.loads(body)["result"]["content"][0]["text"] == "q"
            # Nobody can resume a JSON answer: nothing of it stays in the event store.
            (hs,) = app.sessions.values()
            assert hs.store.size == 0 and len(hs.store.streams) == 1  # the GET stream
            # Progress before the result: an SSE stream, primed, progress first.
            resp = await raw.post(request_body(3, "tools/call", {
                "name": "count", "arguments": {"n": 2, "delay": 0.01},
                "_meta": {"progressToken": "t"},
            }))
            assert resp.content_type == "text/event-stream"
            events = await read_events(resp)
            await resp.aclose()
            assert events[0].data == "" and events[0].id is not None
            got = messages(events)
            assert [m.get("method") for m in got] == ["notifications/progress"] * 2 + [None]
            assert got[-1]["id"] == 3
            await raw.aclose()


async def test_silent_call_gets_a_primed_stream_after_the_window() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(json_window=0.05) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            # The headers come although the tool never answers.
            resp = await raw.post(request_body(4, "tools/call", {"name": "hang", "arguments": {}}))
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            await resp.aclose()
            await raw.aclose()


async def test_batch_answered_as_one_json_array() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            raw = RawClient(url)
            await raw.initialize("2025-03-26")
            batch = b"[" + request_body(1, "ping") + b"," + request_body(2, "tools/list") + b"]"
            status, headers, body = await raw.simple("POST", batch)
            assert status == 200 and headers["content-type"] == "application/json"
            assert sorted(m["id"] for m in orjson.loads(body)) == [1, 2]
            await raw.aclose()


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_client_roundtrip_on_both_servers(http_server: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(http_server=http_server) as (_, url), connect_http(url) as client:
            for i in range(20):
                result = await client.call_tool("echo", {"text": f"m{i}"})
                assert result.content[0].text == f"m{i}"  # type: ignore[union-attr]
            seen: list[float] = []
            await client.call_tool("count", {"n": 3, "delay": 0.0},
                                   on_progress=lambda p, t, m: seen.append(p))
            assert seen == [1, 2, 3]


def _raw_exchange(port: int, data: bytes, expect: int) -> bytes:
    """Send bytes, read until ``expect`` responses (by status line) came or EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        got = b""
        while got.count(b"HTTP/1.1 ") < expect:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


async def test_h11_server_pipelining_and_garbage() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            body = init_body()
            one = (
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            # Two requests in one write: two answers, in order, on the same connection.
            got = await trio.to_thread.run_sync(_raw_exchange, port, one + one, 2)
            assert got.count(b"HTTP/1.1 200 ") == 2 and got.count(b"mcp-session-id") == 2
            got = await trio.to_thread.run_sync(_raw_exchange, port, b"NOT HTTP\r\n\r\n", 1)
            assert got.startswith(b"HTTP/1.1 400 ")


async def test_h11_server_head_request_gets_a_bodiless_answer() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            head = b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            got = await trio.to_thread.run_sync(_raw_exchange, port, head + head, 2)
            # 405 twice on one connection: the body the app wrote was dropped, not sent.
            assert got.count(b"HTTP/1.1 405 ") == 2 and b"jsonrpc" not in got
