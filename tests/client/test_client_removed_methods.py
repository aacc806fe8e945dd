"""A client speaking 2026-07-28 asked for a request that revision removed: an error
that names the fix (connect with mode="legacy", or the revision's equivalent), raised
before anything is sent; and the two the client translates itself (the log level goes
in each request's ``_meta``; a roots change needs no notification)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcpactor import ClientHandlers, connect_stdio
from mcpactor.protocol import types as t
from mcpactor.protocol.errors import LocalProtocolError

SERVER = [sys.executable, "-m", "mcpactor", "run",
          f"{Path(__file__).resolve().parents[1] / 'server' / 'upstream_server.py'}:server"]


async def test_removed_requests_say_how_to_do_without_them() -> None:
    async with connect_stdio(SERVER) as client:
        assert client.stateless and client.protocol_version == "2026-07-28"
        for call, instead in (
                (client.ping(), "server/discover (Client.discover())"),
                (client.subscribe("file:///readme"), "subscriptions/listen"),
                (client.unsubscribe("file:///readme"), "subscriptions/listen"),
                (client.request("logging/setLevel", {"level": "info"}),
                 "io.modelcontextprotocol/logLevel")):
            with pytest.raises(LocalProtocolError) as info:
                await call
            message = info.value.message
            assert 'connect with mode="legacy"' in message, message
            assert "2026-07-28" in message and instead in message, message
        with pytest.raises(LocalProtocolError, match='mode="legacy"'):
            await client.session.notify("notifications/roots/list_changed")
        discovered = await client.discover()  # what to use instead of ping
        assert "2026-07-28" in discovered["supportedVersions"]
        # The session still works: nothing was sent.
        assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}


async def test_discover_in_a_handshake_session_names_the_mode() -> None:
    async with connect_stdio(SERVER, mode="legacy") as client:
        with pytest.raises(LocalProtocolError, match='mode="auto"'):
            await client.discover()
        await client.ping()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_set_logging_level_in_either_era(mode: str) -> None:
    logs: list[Any] = []
    handlers = ClientHandlers(on_log=lambda params: logs.append((params.level, params.data)),
                              roots=[t.Root(uri="file:///work")])
    async with connect_stdio(SERVER, handlers=handlers, mode=mode) as client:
        if client.stateless:
            # 2026-07-28: no level in a request's _meta, no log messages at all.
            await client.call_tool("count", {"n": 1})
            await client.session.settle()
            assert logs == []
        await client.set_logging_level("warning")
        await client.call_tool("count", {"n": 1})  # logs at info: below the level
        await client.set_logging_level("info")
        await client.call_tool("count", {"n": 2})
        await client.session.settle()
        assert logs == [("info", "step 1"), ("info", "step 2")]
        await client.send_roots_list_changed()  # in 2026-07-28: nothing to tell
        if client.stateless:
            with pytest.raises(ValueError, match="unknown log level"):
                await client.set_logging_level("loud")
