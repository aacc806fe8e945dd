"""What leaves a ``connect_*`` block is the exception itself, not a group of one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from mcpactor import McpError, connect_http, connect_stdio
from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.session.groups import sole_exception

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "mcpactor.cli", "run",
          str(ROOT / "tests" / "transports" / "stdio_server.py") + ":server"]


class _Mine(Exception):
    pass


async def test_the_callers_own_exception_comes_out_as_itself() -> None:
    with pytest.raises(_Mine, match="from the body"):
        async with connect_stdio(SERVER) as client:
            await client.list_tools()
            raise _Mine("from the body")


async def test_a_server_that_exits_before_answering_is_a_connection_closed() -> None:
    with pytest.raises(ConnectionClosed, match="before answering initialize and exited "
                                               "with status 3"):
        async with connect_stdio([sys.executable, "-c", "print('not MCP'); raise SystemExit(3)"]):
            pass


async def test_a_refused_http_connection_is_an_mcp_error() -> None:
    # Port 1 on the loopback: nothing listens there.
    with pytest.raises(McpError, match=r"cannot connect to 127\.0\.0\.1:1"):
        async with connect_http("http://127.0.0.1:1/mcp", init_timeout=10):
            pass


async def test_a_url_that_is_not_http_is_a_value_error_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="not an http"):
        async with connect_http("127.0.0.1:8000/mcp"):
            pass


def test_only_groups_of_one_are_unwrapped() -> None:
    inner = ValueError("x")
    assert sole_exception(ExceptionGroup("a", [ExceptionGroup("b", [inner])])) is inner
    assert sole_exception(ExceptionGroup("a", [inner, KeyError("y")])) is None
    assert sole_exception(inner) is inner


async def test_cancellation_of_the_caller_still_cancels() -> None:
    with trio.move_on_after(0.5) as scope:
        async with connect_stdio(SERVER):
            await trio.sleep_forever()
    assert scope.cancelled_caught
