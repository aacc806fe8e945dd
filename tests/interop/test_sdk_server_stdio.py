"""OUR client (``mcpactor.connect_stdio``) drives a server written with the official
Python SDK (``mcp`` 2.x ``MCPServer``, tests/interop/sdk_mcpserver.py) over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from interop_support import HERE, ROOT, subprocess_env

import mcpactor
from mcpactor import McpError
from mcpactor.protocol import types as t

pytestmark = pytest.mark.interop

TEST_TIMEOUT = 20
SDK_SERVER = [sys.executable, str(HERE / "sdk_mcpserver.py")]


@asynccontextmanager
async def sdk_server(protocol_version: str | None = None) -> AsyncIterator[mcpactor.Client]:
    kwargs = {} if protocol_version is None else {"protocol_version": protocol_version}
    async with mcpactor.connect_stdio(
        SDK_SERVER, cwd=str(ROOT), env=subprocess_env(), timeout=10, init_timeout=15, **kwargs, mode="legacy"
    ) as client:
        yield client


def _texts(result: t.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, t.TextContent)]


async def test_initialize_and_ping() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_server() as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info == {"name": "sdk-interop-server", "version": "9.9.9"}
            assert {"tools", "resources", "prompts"} <= set(client.server_capabilities)
            assert client.instructions == "An SDK server for interop tests."
            await client.ping()


@pytest.mark.parametrize("version", ["2024-11-05"])
async def test_older_protocol_versions(version: str) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_server(version) as client:
            assert client.protocol_version == version
            assert _texts(await client.call_tool("greet", {"name": "Old"})) == ["Hello, Old!"]


async def test_list_and_call_tools() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_server() as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            assert set(tools) == {"greet", "add", "weather", "count_up", "fail"}
            assert tools["greet"].description == "Say hello to someone."
            assert tools["add"].input_schema["required"] == ["a", "b"]
            weather_schema = tools["weather"].output_schema
            assert weather_schema is not None
            assert set(weather_schema["properties"]) == {"city", "temperature", "conditions"}

            greet = await client.call_tool("greet", {"name": "Ada"})
            assert not greet.is_error
            assert _texts(greet) == ["Hello, Ada!"]

            added = await client.call_tool("add", {"a": 2, "b": 40})
            assert not added.is_error
            assert added.structured_content == {"result": 42}
            assert _texts(added) == ["42"]

            weather = await client.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content == {
                "city": "Oslo",
                "temperature": 21.5,
                "conditions": "Sunny",
            }
            (text,) = _texts(weather)
            assert json.loads(text) == weather.structured_content

            counted = await client.call_tool(
                "count_up",
                {"steps": 3},
                on_progress=lambda value, total, message: progress.append((value, total, message)),
            )
            assert _texts(counted) == ["counted to 3"]
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

            failed = await client.call_tool("fail", {"reason": "on purpose"})
            assert failed.is_error is True
            assert "on purpose" in _texts(failed)[0]

            # Bad arguments: the SDK answers with an isError result (validation error).
            invalid = await client.call_tool("add", {"a": "not a number", "b": 1})
            assert invalid.is_error is True

            await client.ping()


async def test_resources() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_server() as client:
            resources = (await client.list_resources()).resources
            assert [(r.uri, r.name, r.mime_type) for r in resources] == [
                ("sdk://greeting", "greeting", "text/plain")
            ]
            templates = (await client.list_resource_templates()).resource_templates
            assert [tpl.uri_template for tpl in templates] == ["sdk://items/{item_id}"]

            read = await client.read_resource("sdk://greeting")
            (contents,) = read.contents
            assert isinstance(contents, t.TextResourceContents)
            assert contents.uri == "sdk://greeting"
            assert contents.mime_type == "text/plain"
            assert contents.text == "Greetings from the SDK server."

            templated = await client.read_resource("sdk://items/42")
            (contents,) = templated.contents
            assert isinstance(contents, t.TextResourceContents)
            assert json.loads(contents.text) == {"id": "42", "kind": "item"}

            with pytest.raises(McpError):
                await client.read_resource("sdk://nothing-here")
            await client.ping()


async def test_prompts() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_server() as client:
            (prompt,) = (await client.list_prompts()).prompts
            assert prompt.name == "review"
            assert prompt.description == "Ask for a code review."
            assert [(a.name, a.required) for a in prompt.arguments or []] == [
                ("language", True),
                ("code", True),
            ]

            rendered = await client.get_prompt("review", {"language": "Python", "code": "x = 1"})
            (message,) = rendered.messages
            assert message.role == "user"
            assert isinstance(message.content, t.TextContent)
            assert message.content.text == "Please review this Python code:\nx = 1"

            with pytest.raises(McpError):
                await client.get_prompt("no-such-prompt", {})
