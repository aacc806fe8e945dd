"""OUR client in its default mode (``auto``: ``server/discover`` first) against servers
written with the official Python SDK (``mcp`` 2.3.0), which speak 2026-07-28: the client
must negotiate 2026-07-28 with them over stdio and over Streamable HTTP, and then do
what that revision offers there: tools (structured output, progress), resources,
prompts, a two-round ``InputRequiredResult`` answered by our ``ClientHandlers``, and a
``subscriptions/listen`` stream fed by the SDK's subscription bus."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from interop_support import ROOT

from mcpactor import ClientHandlers, connect_http, connect_stdio
from mcpactor.protocol import types as t

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
SDK_2026 = [sys.executable, str(HERE / "sdk_server_2026.py")]
SDK_CLASSIC = [sys.executable, str(HERE / "sdk_mcpserver.py")]


async def _elicit(params: Any) -> t.ElicitResult:
    key = next(iter(params.requested_schema["properties"]))
    return t.ElicitResult(action="accept", content={key: {"name": "Ann", "city": "Oslo"}[key]})


HANDLERS = ClientHandlers(elicitation=_elicit)


def _serve_http(args: list[str], port: int) -> Iterator[str]:
    proc = subprocess.Popen([*args, "http", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def sdk_http_url() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield from _serve_http(SDK_2026, port)


def _connect(transport: str, url: str) -> Any:
    if transport == "http":
        return connect_http(url, handlers=HANDLERS, timeout=10)
    return connect_stdio(SDK_2026, cwd=str(ROOT), handlers=HANDLERS, timeout=10,
                         init_timeout=20)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_auto_mode_negotiates_2026_with_the_sdk_server(
        transport: str, sdk_http_url: str) -> None:
    with trio.fail_after(40):
        async with _connect(transport, sdk_http_url) as client:
            assert client.protocol_version == "2026-07-28"
            assert client.discover_result is not None
            assert client.server_info["name"] == "sdk-2026-server"
            names = {tool.name for tool in await client.list_all_tools()}
            assert {"greet", "steps", "introduce", "change_tools"} <= names
            assert (await client.call_tool("greet", {"name": "Bo"})).content[0].text == (
                "Hello, Bo!")
            seen: list[float] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                seen.append(value)

            done = await client.call_tool("steps", {"n": 3}, on_progress=progress)
            assert done.content[0].text == "3 steps"
            assert seen == [1, 2, 3]
            # Two input_required rounds, answered by the same elicitation handler.
            assert (await client.call_tool("introduce", {})).content[0].text == "Ann from Oslo"
            async with client.listen(tools=True, prompts=True) as sub:
                assert sub.acknowledged is not None
                assert sub.acknowledged.get("toolsListChanged") is True
                await client.call_tool("change_tools", {})
                note = await sub.next(timeout=5)
                assert note.method == "notifications/tools/list_changed"
                assert note.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub.id


async def test_the_classic_sdk_server_over_stdio_speaks_2026_too() -> None:
    # The SDK server the handshake-era tests use: nothing in it opts in, and it still
    # answers server/discover; resources and prompts over the stateless wire.
    with trio.fail_after(40):
        async with connect_stdio(SDK_CLASSIC, cwd=str(ROOT), timeout=10,
                                 init_timeout=20) as client:
            assert client.protocol_version == "2026-07-28"
            weather = await client.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content == {
                "city": "Oslo", "temperature": 21.5, "conditions": "Sunny"}
            text = await client.read_resource("sdk://greeting")
            assert text.contents[0].text == "Greetings from the SDK server."
            item = await client.read_resource("sdk://items/7")
            assert '"id": "7"' in item.contents[0].text
            prompt = await client.get_prompt("review", {"language": "py", "code": "x=1"})
            assert "py" in prompt.messages[0].content.text
