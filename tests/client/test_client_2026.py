"""mcpactor's client speaks 2026-07-28: discover first (``mode="auto"``), pinned, or the
handshake (``mode="legacy"``), against our everything server over stdio and HTTP;
``input_required`` rounds are answered by the same ClientHandlers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from process_support import http_process

from mcpactor.client.client import ClientHandlers, connect_stdio
from mcpactor.client.remote import connect_http
from mcpactor.protocol import types as t

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "everything_server.py")


async def _elicit(params: Any) -> t.ElicitResult:
    answer = {"name": "Ann"} if "name" in params.message else {"color": "teal"}
    return t.ElicitResult(action="accept", content=answer)


async def _sample(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="Paris"), model="m")


HANDLERS = ClientHandlers(elicitation=_elicit, sampling=_sample,
                          roots=[t.Root(uri="file:///tmp", name="tmp")])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    for url, _ in http_process([sys.executable, EXAMPLE], cwd=ROOT):
        yield url


@pytest.mark.parametrize(("mode", "expected"), [
    ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_client_eras(transport: str, mode: str, expected: str, http_url: str) -> None:
    with trio.fail_after(30):
        cm = (connect_http(http_url, handlers=HANDLERS, mode=mode) if transport == "http"
              else connect_stdio([sys.executable, EXAMPLE], handlers=HANDLERS, mode=mode))
        async with cm as client:
            assert client.protocol_version == expected
            assert (await client.call_tool("test_simple_text", {})).content[0].text == (
                "This is a simple text response for testing.")
            multi = await client.call_tool("test_input_required_result_multi_round", {})
            assert multi.content[0].text == "Ann likes teal"
            many = await client.call_tool("test_input_required_result_multiple_inputs", {})
            assert many.content[0].text == "name=Ann, greeting received, 1 root(s)"
            sampled = await client.call_tool("test_sampling", {"prompt": "x"})
            assert sampled.content[0].text == "LLM response: Paris"
            assert "test_simple_text" in {tool.name for tool in await client.list_all_tools()}
