"""Registering handlers the way a Python team writes them: decorators with and without
parentheses, resources that return data, missing resources, capabilities declared up
front, and notifications that cannot be sent."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
import trio

import mcpactor
from mcpactor import ClientHandlers, McpError, ResourceNotFound, Server
from mcpactor.protocol import types as t
from mcpactor.protocol.versions import resource_not_found_code
from mcpactor.testing import open_client

# -- decorators without parentheses -----------------------------------------------------


async def test_tool_decorator_without_parentheses_registers_the_function() -> None:
    server = Server("bare")

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def sub(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    async def mul(a: int, b: int) -> int:
        return a * b

    server.tool(mul, title="Multiply")  # the function first, options after it

    # The name stays bound to the function, not to a decorator factory.
    assert callable(add) and add.__name__ == "add"
    assert await add(1, 2) == 3
    async with open_client(server) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        assert sorted(tools) == ["add", "mul", "sub"]
        assert tools["mul"].title == "Multiply"
        res = await c.call_tool("add", {"a": 2, "b": 3})
        assert res.structured_content == {"result": 5}


async def test_prompt_and_completion_decorators_without_parentheses() -> None:
    server = Server("bare")

    @server.prompt
    async def hello(name: str) -> str:
        """Say hello."""
        return f"Hello {name}"

    @server.completion
    async def complete(ref: Any, argument: t.CompletionArgument, context: Any) -> list[str]:
        return ["x"]

    assert hello.__name__ == "hello" and complete.__name__ == "complete"
    async with open_client(server) as c:
        assert [p.name for p in (await c.list_prompts()).prompts] == ["hello"]
        res = await c.complete({"type": "ref/prompt", "name": "hello"}, {"name": "name", "value": ""})
        assert res.completion.values == ["x"]


def test_resource_decorator_without_a_uri_is_a_clear_type_error() -> None:
    server = Server("bare")
    with pytest.raises(TypeError, match=r"@server\.resource needs a URI"):

        @server.resource  # type: ignore[arg-type]
        async def data() -> str:
            return "x"

    with pytest.raises(TypeError, match=r"@server\.resource_template needs a URI template"):

        @server.resource_template  # type: ignore[arg-type]
        async def more() -> str:
            return "x"

    with pytest.raises(TypeError, match=r"@server\.method needs the method's name"):

        @server.method  # type: ignore[arg-type]
        async def custom(params: Any, ctx: Any) -> dict[str, Any]:
            return {}


# -- resources returning structured data ----------------------------------------------


@dataclass
class Note:
    title: str
    tags: list[str]


def data_server() -> Server:
    server = Server("data")

    @server.resource("data://names")
    async def names() -> list[str]:
        return ["ada", "grace"]

    @server.resource("data://config")
    def config() -> dict[str, Any]:
        return {"debug": True, "level": 3}

    @server.resource("data://note")
    async def note() -> Note:
        return Note("hi", ["a", "b"])

    @server.resource("data://notes/{n}")
    async def numbered(n: int) -> list[int]:
        return list(range(n))

    @server.resource("data://text", mime_type="text/plain")
    async def text() -> str:
        return "plain"

    return server


async def test_a_resource_returning_structured_data_is_one_json_content() -> None:
    async with open_client(data_server()) as c:
        for uri, expected in (
            ("data://names", '["ada","grace"]'),
            ("data://config", '{"debug":true,"level":3}'),
            ("data://note", '{"title":"hi","tags":["a","b"]}'),
            ("data://notes/3", "[0,1,2]"),
        ):
            contents = (await c.read_resource(uri)).contents
            assert len(contents) == 1, uri
            (item,) = contents
            assert isinstance(item, t.TextResourceContents)
            assert (item.uri, item.mime_type, item.text) == (uri, "application/json", expected)
        (item,) = (await c.read_resource("data://text")).contents
        assert isinstance(item, t.TextResourceContents)
        assert (item.text, item.mime_type) == ("plain", "text/plain")


# -- missing resources -------------------------------------------------------------------


def missing_server() -> Server:
    server = Server("missing")
    files = {"a.txt": "A"}

    @server.resource("file:///{name}")
    async def read(name: str) -> str:
        if name not in files:
            raise ResourceNotFound(f"file:///{name}")
        return files[name]

    @server.resource("mem://broken")
    async def broken() -> str:
        raise KeyError("oops")

    return server


def test_the_code_for_a_missing_resource_follows_the_revision() -> None:
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert resource_not_found_code(version) == -32002, version
    # SEP-2164 (2026-07-28 and later) standardized -32602; unknown (newer) revisions too.
    assert resource_not_found_code("2026-07-28") == -32602
    assert resource_not_found_code("2027-01-01") == -32602
    # resources/metadata comes from SEP-2093, which always said -32602.
    assert resource_not_found_code("2025-11-25", method="resources/metadata") == -32602


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_resource_not_found_is_32002_where_the_revision_asks(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_client(missing_server(), protocol_version=version) as c:
        (item,) = (await c.read_resource("file:///a.txt")).contents
        assert getattr(item, "text", None) == "A"
        for uri in ("file:///b.txt", "nothing://here"):  # raised by the handler / no handler
            with pytest.raises(McpError) as info:
                await c.read_resource(uri)
            assert info.value.code == -32002, uri
            assert info.value.message == "Resource not found"
            assert info.value.data == {"uri": uri}
        # SEP-2093's method keeps SEP-2093's code.
        with pytest.raises(McpError) as info:
            await c.resource_metadata("nothing://here")
        assert info.value.code == -32602 and info.value.data == {"uri": "nothing://here"}
    # Not found is an answer, not a failure of ours: no traceback in the logs.
    assert not [r for r in caplog.records if r.exc_info]


async def test_resource_not_found_is_32602_from_2026_07_28() -> None:
    from mcpactor.server.handler import _not_found

    exc = _not_found("file:///b.txt", "2026-07-28", "resources/read")
    assert exc.code == -32602 and exc.to_error() == {
        "code": -32602, "message": "Resource not found", "data": {"uri": "file:///b.txt"}}


async def test_other_exceptions_in_a_resource_stay_internal_errors() -> None:
    async with open_client(missing_server()) as c:
        with pytest.raises(McpError) as info:
            await c.read_resource("mem://broken")
        assert info.value.code == -32603


def test_resource_not_found_is_exported_at_the_top_level() -> None:
    assert mcpactor.ResourceNotFound is ResourceNotFound
    exc = ResourceNotFound("file:///x")
    assert exc.uri == "file:///x" and "file:///x" in str(exc)
    assert isinstance(exc, McpError)


# -- capabilities and list_changed at run time -------------------------------------------


async def test_prompts_added_at_run_time_reach_a_server_that_declared_them() -> None:
    server = Server("grows", capabilities={"prompts": {"listChanged": True}})
    changed = trio.Event()
    handlers = ClientHandlers(on_prompts_changed=lambda _params: changed.set())
    async with open_client(server, handlers=handlers) as c:
        assert c.server_capabilities["prompts"] == {"listChanged": True}
        assert (await c.list_prompts()).prompts == []

        @server.prompt
        async def late() -> str:
            """Added later."""
            return "late"

        await server.notify_prompts_list_changed()
        with trio.fail_after(5):
            await changed.wait()
        assert [p.name for p in (await c.list_prompts()).prompts] == ["late"]


async def test_capabilities_can_be_declared_by_name_or_as_an_object() -> None:
    by_name = Server("names", capabilities=["tools", "resources", "prompts"])
    typed = Server("typed", capabilities=t.ServerCapabilities(
        tools=t.ToolsCapability(list_changed=True)))
    async with open_client(by_name) as c:
        caps = c.server_capabilities
        assert caps["tools"] == {"listChanged": True}
        assert caps["prompts"] == {"listChanged": True}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert (await c.list_tools()).tools == []
        assert (await c.list_resources()).resources == []
    async with open_client(typed) as c:
        assert c.server_capabilities["tools"] == {"listChanged": True}
        assert "prompts" not in c.server_capabilities
    with pytest.raises(ValueError, match="unknown capability 'tool'"):
        Server("bad", capabilities=["tool"])


async def test_a_notification_a_session_cannot_take_is_logged_not_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server("frozen")  # no prompts: the session does not declare them
    async with open_client(server) as c:
        await c.ping()  # the server has the initialized notification: it is operating

        @server.prompt
        async def late() -> str:
            """Added later."""
            return "late"

        with caplog.at_level(logging.WARNING, logger="mcpactor.server"):
            await server.notify_prompts_list_changed()
        await c.ping()
    messages = [r.getMessage() for r in caplog.records if r.name == "mcpactor.server"]
    assert any("notifications/prompts/list_changed" in m and "capabilities=" in m
               for m in messages), messages
