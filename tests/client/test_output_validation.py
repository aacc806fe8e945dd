"""The client checks a tool's structuredContent against the outputSchema it listed (the
spec's SHOULD), against a real stdio server process that lies about its results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from mcpactor import ClientHandlers, InvalidResult, connect_stdio

LYING = [sys.executable, str(Path(__file__).with_name("lying_server.py"))]


async def test_results_are_checked_against_the_listed_output_schema() -> None:
    async with connect_stdio(LYING) as client:
        # Not listed yet: nothing to check against, the result comes as it is.
        unchecked = await client.call_tool("weather", {"mode": "wrong_type"})
        assert unchecked.structured_content == {"celsius": "warm", "city": "Oslo"}
        await client.list_all_tools()
        good = await client.call_tool("weather", {"mode": "good"})
        assert good.structured_content == {"celsius": 21.5, "city": "Oslo"}
        with pytest.raises(InvalidResult) as wrong:
            await client.call_tool("weather", {"mode": "wrong_type"})
        assert wrong.value.data == {"path": "$.celsius", "reason": "expected number, got string"}
        assert "'weather' returned structuredContent that does not match" in str(wrong.value)
        with pytest.raises(InvalidResult, match="no structuredContent"):
            await client.call_tool("weather", {"mode": "missing"})
        # An error result carries no structured output; a tool without a schema is free.
        failed = await client.call_tool("weather", {"mode": "error"})
        assert failed.is_error
        assert (await client.call_tool("plain")).structured_content is not None
        # The caller may opt out for one call.
        raw = await client.call_tool("weather", {"mode": "wrong_type"}, validate=False)
        assert raw.structured_content == {"celsius": "warm", "city": "Oslo"}
        # The session is still healthy after a refused result.
        assert (await client.call_tool("weather")).structured_content is not None


async def test_a_tools_list_changed_notification_forgets_the_schemas() -> None:
    changed = trio.Event()
    handlers = ClientHandlers(on_tools_changed=lambda _params: changed.set())
    async with connect_stdio(LYING, handlers=handlers) as client:
        await client.list_tools()
        await client.call_tool("weather", {"mode": "good", "then_changed": True})
        with trio.fail_after(5):
            await changed.wait()
        # The listed schema may be stale now: until the next tools/list, no check.
        result = await client.call_tool("weather", {"mode": "wrong_type"})
        assert result.structured_content == {"celsius": "warm", "city": "Oslo"}
        await client.list_tools()
        with pytest.raises(InvalidResult):
            await client.call_tool("weather", {"mode": "wrong_type"})
