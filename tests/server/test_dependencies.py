"""``Depends(...)``: parameters filled per request, hidden from the input schema, with
cleanup after the request; in tools, resources, templates and prompts."""

# No `from __future__ import annotations`: Annotated[..., Depends(local_fn)] needs the
# local function when the hints are read.

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import pytest

from mcpactor import Context, Depends, McpError, RequestError, Server, ToolError
from mcpactor.testing import open_client


class Db:
    def __init__(self, log: list[str], name: str = "db") -> None:
        self.log = log
        self.name = name


def make_server(log: list[str]) -> Server[dict[str, Any]]:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        yield {"dsn": "sqlite://memory"}

    server: Server[dict[str, Any]] = Server("deps", lifespan=lifespan)

    async def settings(ctx: Context[dict[str, Any]]) -> str:
        log.append("settings")
        return str(ctx.lifespan["dsn"])

    async def get_db(dsn: str = Depends(settings)) -> AsyncIterator[Db]:
        log.append(f"open {dsn}")
        try:
            yield Db(log)
        except ValueError as exc:
            log.append(f"rollback after {exc}")
            raise
        finally:
            log.append("close")

    def get_user(user_id: int, db: Db = Depends(get_db)) -> str:
        # Takes the tool's own argument by name, and shares the request's Db.
        log.append(f"user {user_id} from {db.name}")
        return f"user-{user_id}"

    def counter() -> Iterator[int]:
        log.append("counter up")
        yield len(log)
        log.append("counter down")

    @server.tool
    async def whoami(user_id: int, db: Annotated[Db, Depends(get_db)],
                     user: str = Depends(get_user)) -> str:
        """Who is asking."""
        return f"{user} via {db.name}"

    @server.tool
    async def fails(db: Db = Depends(get_db)) -> str:
        raise ValueError("boom")

    @server.tool
    async def twice(a: int = Depends(counter), b: int = Depends(counter),
                    c: int = Depends(counter, use_cache=False)) -> list[int]:
        return [a, b, c]

    def deny() -> None:
        raise ToolError("not allowed for you")

    @server.tool
    async def guarded(_: None = Depends(deny)) -> str:
        return "never"

    def protocol_error() -> None:
        raise McpError("no quota left", code=-32001)

    @server.tool
    async def quota(_: None = Depends(protocol_error)) -> str:
        return "never"

    @server.tool
    def sync_tool(db: Db = Depends(get_db)) -> str:
        return f"sync with {db.name}"

    @server.resource("users://{user_id}")
    async def user_resource(user_id: int, user: str = Depends(get_user)) -> str:
        return f"resource of {user}"

    @server.prompt
    async def greet(style: str, db: Db = Depends(get_db)) -> str:
        return f"greet in {style} style ({db.name})"

    return server


async def test_dependencies_are_hidden_from_the_schema_and_filled_per_call() -> None:
    log: list[str] = []
    async with open_client(make_server(log)) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        schema = tools["whoami"].input_schema
        assert schema["properties"] == {"user_id": {"type": "integer"}}
        assert schema["required"] == ["user_id"]
        # A client that names a dependency cannot set it.
        result = await client.call_tool("whoami", {"user_id": 7, "db": "mine"})
        assert result.content[0].text == "user-7 via db"  # type: ignore[union-attr]
    # settings and get_db ran once though two parameters needed the Db; cleanup last.
    assert log == ["settings", "open sqlite://memory", "user 7 from db", "close"]


async def test_cleanup_sees_the_handlers_exception() -> None:
    log: list[str] = []
    async with open_client(make_server(log)) as client:
        result = await client.call_tool("fails", {})
    assert result.is_error
    assert log[-2:] == ["rollback after boom", "close"]


async def test_values_are_shared_within_a_request_unless_asked_not_to() -> None:
    log: list[str] = []
    async with open_client(make_server(log)) as client:
        first = await client.call_tool("twice", {})
        second = await client.call_tool("twice", {})
    a, b, c = first.data["result"]  # type: ignore[index]
    assert a == b and c != a
    assert log.count("counter up") == 4 and log.count("counter down") == 4
    assert second.data != first.data  # fresh values for every request


async def test_a_dependency_refuses_as_the_tool_would() -> None:
    async with open_client(make_server([])) as client:
        denied = await client.call_tool("guarded", {})
        assert denied.is_error and denied.content[0].text == "not allowed for you"  # type: ignore[union-attr]
        with pytest.raises(RequestError) as info:
            await client.call_tool("quota", {})
    assert info.value.code == -32001


async def test_sync_tools_resources_templates_and_prompts_take_dependencies() -> None:
    log: list[str] = []
    async with open_client(make_server(log)) as client:
        sync = await client.call_tool("sync_tool", {})
        res = await client.read_resource("users://3")
        prompt = await client.get_prompt("greet", {"style": "formal"})
        prompts = await client.list_all_prompts()
    assert sync.content[0].text == "sync with db"  # type: ignore[union-attr]
    assert res.contents[0].text == "resource of user-3"  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "greet in formal style (db)"  # type: ignore[union-attr]
    greet = next(p for p in prompts if p.name == "greet")
    assert [a.name for a in greet.arguments or []] == ["style"]
    assert log.count("close") == 3


def test_what_cannot_be_filled_is_an_error_at_registration() -> None:
    server = Server("bad")

    def needs_mystery(mystery: str) -> str:
        return mystery

    with pytest.raises(TypeError, match="'mystery' that nothing fills"):
        @server.tool
        async def tool(x: int, value: str = Depends(needs_mystery)) -> str:
            return value

    # A cycle: one depends on two depends on one.
    def one(v: Any = None) -> Any:
        return v

    def two(v: Any = Depends(one)) -> Any:
        return v

    one.__defaults__ = (Depends(two),)
    with pytest.raises(TypeError, match="dependency cycle"):
        @server.tool
        async def cyclic(v: Any = Depends(one)) -> str:
            return "never"

    with pytest.raises(TypeError, match="needs a function"):
        Depends("not callable")  # type: ignore[arg-type]
