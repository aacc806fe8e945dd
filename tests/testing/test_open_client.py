"""``open_client``: a server and a client in one Trio run, on virtual time if asked."""

from __future__ import annotations

import time

import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.testing import open_client
from mcpactor.tracing import MemoryRecorder, TraceHeader


def slow_server() -> Server:
    server = Server("slow", "1.0")

    @server.tool()
    async def nap(seconds: float, ctx: Context) -> str:
        """Sleeps, reporting progress every second."""
        for i in range(int(seconds)):
            await ctx.report_progress(i + 1, seconds)
            await trio.sleep(1)
        return f"napped {seconds}"

    return server


async def test_an_hour_of_naps_takes_no_real_time(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[float] = []
    started = time.monotonic()
    recorder = MemoryRecorder(TraceHeader(role="server", transport="memory"))
    async with open_client(slow_server(), server_tracer=recorder) as client:
        result = await client.call_tool(
            "nap", {"seconds": 3600}, on_progress=lambda p, total, msg: seen.append(p))
    assert result.content[0].text == "napped 3600"  # type: ignore[union-attr]
    assert seen == [float(i) for i in range(1, 3601)]
    assert trio.current_time() >= 3600 and time.monotonic() - started < 60
    kinds = [e["kind"] for e in recorder.events()]
    assert kinds.count("progress") == 3600 and kinds[-1] == "session_closed"


async def test_a_client_timeout_fires_on_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from mcpactor import RequestTimeout

    async with open_client(slow_server(), timeout=5) as client:
        try:
            await client.call_tool("nap", {"seconds": 2})
            await client.call_tool("nap", {"seconds": 60}, timeout=10)
        except RequestTimeout:
            timed_out_at = trio.current_time()
        else:
            raise AssertionError("the 60 s nap should time out after 10 s")
    assert 12 <= timed_out_at < 13
