"""``Client.listen``: changes heard while a block runs, in either era (a
``subscriptions/listen`` request in 2026-07-28, subscriptions in a handshake session),
against a real server process over stdio and over HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import (
    ClientHandlers,
    McpError,
    MiddlewareContext,
    RequestError,
    Server,
    connect_http,
    connect_stdio,
)
from mcpactor.protocol import types as t
from mcpactor.testing import open_client

ROOT = Path(__file__).resolve().parents[2]
TARGET = f"{ROOT / 'docs' / 'examples' / 'resources_example.py'}:server"


def _watching() -> tuple[ClientHandlers, list[str], trio.Event]:
    seen: list[str] = []
    arrived = trio.Event()

    def updated(params: t.ResourceUpdatedNotificationParams) -> None:
        seen.append(params.uri)
        arrived.set()

    return ClientHandlers(on_resource_updated=updated), seen, arrived


async def _listen_and_edit(client: object, seen: list[str], arrived: trio.Event) -> None:
    async with client.listen(tools=True,  # type: ignore[attr-defined]
                             resource_uris=["notes://note/1"]) as sub:
        assert (sub.acknowledged or {})["resourceSubscriptions"] == ["notes://note/1"]
        assert (sub.acknowledged or {}).get("toolsListChanged") is True
        await client.call_tool("edit", {"note_id": "2", "text": "x"})  # type: ignore[attr-defined]
        await client.call_tool("edit", {"note_id": "1", "text": "y"})  # type: ignore[attr-defined]
        with trio.fail_after(10):
            await arrived.wait()
    assert seen == ["notes://note/1"]  # only the URI listened to
    # After the block: nothing more.
    await client.call_tool("edit", {"note_id": "1", "text": "z"})  # type: ignore[attr-defined]
    await trio.sleep(0.2)
    assert seen == ["notes://note/1"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_listen_over_stdio(mode: str) -> None:
    handlers, seen, arrived = _watching()
    command = [sys.executable, "-m", "mcpactor", "run", TARGET]
    async with connect_stdio(command, handlers=handlers, mode=mode) as client:
        assert client.stateless is (mode == "auto")
        await _listen_and_edit(client, seen, arrived)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_listen_over_http(
        mode: str, http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    _, url = http_server(TARGET)
    handlers, seen, arrived = _watching()
    async with connect_http(url, handlers=handlers, mode=mode) as client:
        assert client.stateless is (mode == "auto")
        await _listen_and_edit(client, seen, arrived)


async def test_a_listen_the_server_refuses_is_its_error() -> None:
    """A server without resource subscriptions acknowledges what it can (nothing
    here); a 2026-07-28 server without subscriptions/listen is an error."""
    bare = Server("bare")

    @bare.tool
    async def one() -> str:
        return "1"

    async with open_client(bare, mode="2026-07-28") as client:
        async with client.listen(resource_uris=["x://y"]) as sub:
            assert "resourceSubscriptions" not in (sub.acknowledged or {})

    async def no_listening(ctx: MiddlewareContext[Any], call_next: Any) -> Any:
        if ctx.method == "subscriptions/listen":
            raise McpError("no listening here", code=-32601)
        return await call_next(ctx)

    bare.add_middleware(no_listening)
    async with open_client(bare, mode="2026-07-28") as client:
        with pytest.raises(RequestError) as info:
            async with client.listen(tools=True):
                raise AssertionError("not acknowledged: the block does not run")
        assert info.value.code == -32601
