"""Interop with the official Python SDK (``mcp``) over HTTP, both directions.

* The SDK's Streamable HTTP client and its legacy SSE client drive OUR server
  (hypercorn in this process, 127.0.0.1).
* OUR client drives the SDK's Streamable HTTP server (uvicorn/starlette in a
  subprocess on 127.0.0.1), in SSE and in JSON response mode, and its legacy HTTP+SSE
  server through the client's fallback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from http_support import free_port, running_app, wait_until
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcpactor import connect_http

pytestmark = pytest.mark.interop

TIMEOUT = 20
SDK_SERVER = Path(__file__).with_name("sdk_http_server.py")


@asynccontextmanager
async def _sdk_session(transport_cm: Any) -> AsyncIterator[ClientSession]:
    failure: BaseException | None = None
    async with transport_cm as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, read_timeout_seconds=10) as session:
            try:
                yield session
            except Exception as exc:
                # Re-raised outside the SDK's task groups so assertions read as themselves.
                failure = exc
    if failure is not None:
        raise failure


async def _exercise_sdk_client(session: ClientSession) -> None:
    init = await session.initialize()
    assert init.server_info.name == "http-test-server"
    tools = await session.list_tools()
    assert {t.name for t in tools.tools} >= {"echo", "count"}
    result = await session.call_tool("echo", {"text": "from the SDK"})
    assert result.content[0].text == "from the SDK"  # type: ignore[union-attr]
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await session.call_tool("count", {"n": 3, "delay": 0.02}, progress_callback=on_progress)
    assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
    assert seen == [1, 2, 3]


async def test_sdk_streamable_http_client_drives_our_server() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url):
            async with _sdk_session(streamable_http_client(url)) as session:
                await _exercise_sdk_client(session)
                assert len(app.sessions) == 1
            # The SDK terminates its session with DELETE on close.
            await wait_until(lambda: not app.sessions)


async def test_sdk_legacy_sse_client_drives_our_server() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url):
            sse_url = url.rsplit("/", 1)[0] + "/sse"
            async with _sdk_session(sse_client(sse_url)) as session:
                await _exercise_sdk_client(session)
                assert len(app.sessions) == 1
            await wait_until(lambda: not app.sessions)


@asynccontextmanager
async def _sdk_server(mode: str) -> AsyncIterator[str]:
    port = free_port()
    async with trio.open_nursery() as nursery:
        proc = await nursery.start(partial(
            trio.run_process,
            [sys.executable, str(SDK_SERVER), str(port), mode],
            check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))
        with trio.fail_after(15):
            while True:
                assert proc.poll() is None, "the SDK server exited"
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    await stream.aclose()
                    break
                except OSError:
                    await trio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}" + ("/sse" if mode == "legacy" else "/mcp")
        finally:
            # Cancelling run_process terminates the child (SIGTERM, then SIGKILL).
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("mode", ["sse", "json", "legacy"])
async def test_our_client_drives_the_sdk_server(mode: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with _sdk_server(mode) as url, connect_http(url, mode="legacy") as client:
            assert client.server_info["name"] == "sdk-http-server"
            assert client.protocol_version == "2025-11-25"
            # legacy: the initialize POST to /sse was refused, and the client fell back.
            assert client.session.transport.uses_legacy == (mode == "legacy")  # type: ignore[attr-defined]
            result = await client.call_tool("greet", {"name": "mcpactor"})
            assert result.content[0].text == "Hello, mcpactor!"
            seen: list[float] = []
            result = await client.call_tool("steps", {"n": 3}, on_progress=lambda p, t, m: seen.append(p))
            assert result.content[0].text == "3 steps"
            if mode == "sse":
                assert seen == [1, 2, 3]
            tools = await client.list_all_tools()
            assert {t.name for t in tools} == {"greet", "steps"}
