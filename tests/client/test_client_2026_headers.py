"""The 2026-07-28 client over Streamable HTTP, against our server on 127.0.0.1: SEP-2243
``Mcp-Param-*`` mirroring of ``x-mcp-header`` arguments (with the Base64 form), tools
with invalid annotations left out of ``tools/list``, the list-and-retry after a
``HeaderMismatch``; and the ``server/discover`` retry at a version the server lists
when it refuses the first one (-32022)."""

from __future__ import annotations

import base64
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import Server, connect_http, connect_stdio
from mcpactor.protocol import versions
from mcpactor.transports.http_serve import serve_http

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = str(ROOT / "examples" / "everything_server.py")


def _server() -> Server:
    server = Server("headers-server", version="1.0.0")

    @server.tool(input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"},
        },
        "required": ["region", "query"],
    })
    async def lookup(region: str, query: str, priority: int | None = None,
                     verbose: bool | None = None) -> str:
        """Mirrors region, priority and verbose into headers."""
        return f"{query} in {region}"

    @server.tool(input_schema={
        "type": "object",
        "properties": {"score": {"type": "number", "x-mcp-header": "Score"}},
    })
    async def scored(score: float = 0.0) -> str:
        """Its annotation is on a number: invalid, a client over HTTP leaves it out."""
        return "scored"

    @server.tool()
    async def plain() -> str:
        """No annotations at all."""
        return "plain"

    return server


class _Tap(trio.abc.Stream):
    """A TCP stream that keeps a copy of every byte the client sends."""

    def __init__(self, inner: trio.abc.Stream, sent: list[bytes]) -> None:
        self.inner, self.sent = inner, sent

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def _served() -> AsyncIterator[tuple[str, list[bytes]]]:
    sent: list[bytes] = []
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(
            _server(), port=0, quiet=True, task_status=task_status))
        yield url, sent
        nursery.cancel_scope.cancel()


def _opener(sent: list[bytes]) -> Any:
    async def open_stream(host: str, port: int) -> trio.abc.Stream:
        return _Tap(await trio.open_tcp_stream(host, port), sent)
    return open_stream


def _posts(sent: list[bytes]) -> list[dict[str, str]]:
    """The header block of each POST the client sent (names lowercased)."""
    out = []
    for chunk in sent:
        if not chunk.startswith(b"POST "):
            continue
        head = chunk.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
        out.append({k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)})
    return out


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


async def test_listed_tools_mirror_their_header_arguments(caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="mcpactor.client")
    with trio.fail_after(20):
        async with _served() as (url, sent):
            async with connect_http(url, open_stream=_opener(sent), timeout=10) as client:
                assert client.protocol_version == "2026-07-28"
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {"lookup", "plain"}  # scored's annotation is invalid
                sent.clear()
                result = await client.call_tool(
                    "lookup", {"region": "Hello, 世界", "query": "q", "priority": 7,
                               "verbose": None})
                assert result.content[0].text == "q in Hello, 世界"
                await client.call_tool("lookup", {"region": "eu", "query": "q2",
                                                  "verbose": False})
    [first, second] = [p for p in _posts(sent) if p.get("mcp-method") == "tools/call"]
    assert first["mcp-name"] == "lookup"
    assert first["mcp-param-region"] == _b64("Hello, 世界")
    assert first["mcp-param-priority"] == "7"
    assert "mcp-param-verbose" not in first  # null: no header
    assert "mcp-param-query" not in first  # not annotated
    assert second["mcp-param-region"] == "eu" and second["mcp-param-verbose"] == "false"
    assert "mcp-param-priority" not in second
    warned = [r.getMessage() for r in caplog.records if "scored" in r.getMessage()]
    assert warned and "number" in warned[0]


async def test_a_call_before_listing_lists_and_retries_once() -> None:
    with trio.fail_after(20):
        async with _served() as (url, sent):
            async with connect_http(url, open_stream=_opener(sent), timeout=10) as client:
                result = await client.call_tool("lookup", {"region": "eu", "query": "q"})
                assert result.content[0].text == "q in eu"
    methods = [p.get("mcp-method") for p in _posts(sent)]
    # The first call had no Mcp-Param-Region: -32020; the client listed and retried.
    assert methods == ["server/discover", "tools/call", "tools/list", "tools/call"]
    calls = [p for p in _posts(sent) if p.get("mcp-method") == "tools/call"]
    assert "mcp-param-region" not in calls[0] and calls[1]["mcp-param-region"] == "eu"


async def test_the_handshake_era_neither_filters_nor_mirrors() -> None:
    with trio.fail_after(20):
        async with _served() as (url, sent):
            async with connect_http(url, open_stream=_opener(sent), timeout=10,
                                    mode="legacy") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert names == {"lookup", "plain", "scored"}
                await client.call_tool("lookup", {"region": "eu", "query": "q"})
    assert not any(k.startswith("mcp-param-") for p in _posts(sent) for k in p)


async def test_discover_is_retried_at_a_version_the_server_lists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A client that would rather speak a newer revision than the server: the server
    # (another process) refuses it with -32022 listing 2026-07-28, and the probe is sent
    # again at that version instead of falling back to the handshake.
    monkeypatch.setattr(versions, "MODERN_VERSIONS", ("2026-07-28", "2099-01-01"))
    monkeypatch.setattr(versions, "LATEST_MODERN_VERSION", "2099-01-01")
    with trio.fail_after(30):
        async with connect_stdio([sys.executable, EVERYTHING]) as client:
            assert client.protocol_version == "2026-07-28"
            assert client.discover_result is not None
            text = (await client.call_tool("test_simple_text", {})).content[0].text
            assert text == "This is a simple text response for testing."


def test_the_server_warns_when_it_registers_an_annotation_clients_will_refuse(
        caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="mcpactor.server")
    _server()
    warned = [r.getMessage() for r in caplog.records if r.name == "mcpactor.server"]
    assert len(warned) == 1  # scored only; lookup's annotations are valid
    assert "'scored'" in warned[0] and "number" in warned[0] and "SEP-2243" in warned[0]
