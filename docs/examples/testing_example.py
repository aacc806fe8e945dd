"""docs/guide/testing.md: tests of a server, in-process, on virtual time.

Run: ``pytest docs/examples/testing_example.py`` (in a project: put the
``pytest_plugins`` line in the root conftest.py).
"""

from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Client, Context, Server
from mcpactor.testing import open_client
from mcpactor.tracing import MemoryRecorder, TraceHeader

pytest_plugins = ["mcpactor.testing.pytest_plugin"]  # the mcp_client fixture

server = Server("testing-example", version="1.0.0")


@server.tool
async def nightly_report(hours: int, ctx: Context) -> str:
    """Waits for hours (progress every hour)."""
    for hour in range(hours):
        await ctx.report_progress(hour + 1, hours)
        await trio.sleep(3600)
    return f"report after {hours} hours"


@pytest.fixture
def mcp_server() -> Server:
    """The server the plugin's mcp_client fixture connects to."""
    return server


@pytest.fixture(params=["legacy", "2026-07-28"])
def mcp_client_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Every test of mcp_client twice: in a handshake session, and in 2026-07-28."""
    return {"mode": request.param}


async def test_a_day_of_waiting_takes_no_time(mcp_client: Client,
                                              autojump_clock: trio.testing.MockClock) -> None:
    result = await mcp_client.call_tool("nightly_report", {"hours": 24}, timeout=90000)
    assert result.content[0].text == "report after 24 hours"  # type: ignore[union-attr]
    assert trio.current_time() >= 24 * 3600


@pytest.mark.trio
async def test_without_the_fixture_and_with_the_servers_events() -> None:
    recorder = MemoryRecorder(TraceHeader(role="server", transport="memory"))
    seen: list[float] = []
    async with open_client(server, server_tracer=recorder) as client:
        result = await client.call_tool("nightly_report", {"hours": 0},
                                        on_progress=lambda p, total, msg: seen.append(p))
    assert result.content[0].text == "report after 0 hours"  # type: ignore[union-attr]
    kinds = [event["kind"] for event in recorder.events()]
    assert "handler_started" in kinds and kinds[-1] == "session_closed"
    assert seen == []
