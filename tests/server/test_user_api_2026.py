"""The server user API in the 2026-07-28 revision (no session; sampling, elicitation
and roots are input rounds that run the handler again): middleware (once per round),
dependencies (set up and cleaned up per round), the lifespan, mounted servers, custom
routes and plain ``def`` handlers in threads, each against a real client; over real
HTTP where the revision's one-request sessions matter."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcpactor import ClientHandlers, Context, Depends, RequestError, Server, connect_http
from mcpactor.protocol import types as t
from mcpactor.server.middleware import LoggingMiddleware, MiddlewareContext, RateLimit
from mcpactor.testing import open_client

MODERN = "2026-07-28"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


async def _elicitation(params: Any) -> t.ElicitResult:
    if getattr(params, "mode", None) == "url":
        return t.ElicitResult(action="accept")
    return t.ElicitResult(action="accept", content={"name": "Ada"})


async def _sampling(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", model="m",
                                 content=t.TextContent(text="hi"))


HANDLERS = ClientHandlers(elicitation=_elicitation, sampling=_sampling,
                          roots=[t.Root(uri="file:///work")])


def _text(result: Any) -> str:
    return str(result.content[0].text)


# -- middleware ----------------------------------------------------------------------


async def test_middleware_runs_once_per_round_and_sees_the_round_end() -> None:
    seen: list[tuple[Any, ...]] = []

    async def record(ctx: MiddlewareContext[Any], call_next: Any) -> Any:
        entry = [ctx.method, ctx.is_retry, ctx.protocol_version,
                 ctx.client_info.get("name")]
        try:
            result = await call_next(ctx)
        except Exception as exc:
            seen.append((*entry, type(exc).__name__))
            raise
        seen.append((*entry, type(result).__name__))
        return result

    async def shout(ctx: MiddlewareContext[Any], call_next: Any) -> Any:
        # A middleware that changes what the handler gets: the request stays in its
        # input rounds.
        if ctx.method == "tools/call" and ctx.params.arguments:
            args = {"greeting": ctx.params.arguments["greeting"].upper()}
            ctx = ctx.replace(params=ctx.params.__class__(name=ctx.params.name,
                                                          arguments=args))
        return await call_next(ctx)

    server = Server("mw", middleware=[record, shout])

    @server.tool
    async def greet(greeting: str, ctx: Context) -> str:
        who = await ctx.elicit("Name?", NAME)
        model = await ctx.sample("Say hi", max_tokens=5)
        return f"{greeting} {who.content['name']}: {model.content.text}"  # type: ignore[index,union-attr]

    async with open_client(server, handlers=HANDLERS, mode=MODERN) as client:
        result = await client.call_tool("greet", {"greeting": "hello"})
    assert _text(result) == "HELLO Ada: hi"
    assert seen == [
        ("tools/call", False, MODERN, "mcpactor-client", "InputRequired"),
        ("tools/call", True, MODERN, "mcpactor-client", "InputRequired"),
        ("tools/call", True, MODERN, "mcpactor-client", "CallToolResult"),
    ]


async def test_logging_middleware_tells_an_input_round_from_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server("logged", middleware=[LoggingMiddleware()])

    @server.tool
    async def ask(ctx: Context) -> str:
        return str((await ctx.elicit("Name?", NAME)).content)

    caplog.set_level(logging.INFO, "mcpactor.server.requests")
    async with open_client(server, handlers=HANDLERS, mode=MODERN) as client:
        await client.call_tool("ask", {})
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.endswith("← tools/call ask input required: elicitation-1")
               for line in lines), lines
    assert not any("error" in line for line in lines), lines


async def test_rate_limit_holds_2026_requests_over_http() -> None:
    """Over HTTP each 2026-07-28 request is a session of its own: a bucket per session
    would never run dry."""
    server = Server("limited", middleware=[RateLimit(rate=0.01, burst=2)])

    @server.tool
    async def ping_tool() -> str:
        return "pong"

    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status))
        async with connect_http(url) as client:
            assert client.stateless
            for _ in range(2):
                assert _text(await client.call_tool("ping_tool", {})) == "pong"
            with pytest.raises(RequestError) as refused:
                await client.call_tool("ping_tool", {})
            assert refused.value.code == -32005
        nursery.cancel_scope.cancel()


# -- dependencies --------------------------------------------------------------------


async def test_dependencies_run_and_clean_up_once_per_round() -> None:
    events: list[str] = []

    async def transaction() -> AsyncIterator[str]:
        events.append("begin")
        try:
            yield "tx"
        except Exception as exc:
            events.append(f"rollback ({type(exc).__name__})")
            raise
        else:
            events.append("commit")

    def swallowing() -> Any:
        # A careless dependency that swallows what is thrown in: it cannot swallow an
        # input round (the client is still asked).
        try:
            yield "lenient"
        except Exception:
            events.append("swallowed")

    server = Server("deps")

    @server.tool
    async def book(ctx: Context, tx: str = Depends(transaction),
                   lenient: str = Depends(swallowing)) -> str:
        who = await ctx.elicit("Name?", NAME)
        return f"{tx} {lenient} for {who.content['name']}"  # type: ignore[index]

    async with open_client(server, handlers=HANDLERS, mode=MODERN) as client:
        assert _text(await client.call_tool("book", {})) == "tx lenient for Ada"
    assert events == ["begin", "swallowed", "rollback (InputRequired)", "begin", "commit"]


# -- lifespan --------------------------------------------------------------------------


async def test_the_lifespan_serves_every_2026_request_over_http() -> None:
    entered: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, int]]:
        entered.append("in")
        try:
            yield {"answer": 42}
        finally:
            entered.append("out")

    server: Server[dict[str, int]] = Server("life", lifespan=lifespan)

    @server.tool
    async def answer(ctx: Context[dict[str, int]]) -> int:
        return ctx.lifespan["answer"]

    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status))
        async with connect_http(url, mode=MODERN) as client:
            for _ in range(3):
                assert (await client.call_tool("answer", {})).data == {"result": 42}
        nursery.cancel_scope.cancel()
    assert entered == ["in", "out"]  # once for the server, not per request


# -- mount -----------------------------------------------------------------------------


def _parent_and_child() -> tuple[Server, list[str]]:
    rounds: list[str] = []

    async def child_mw(ctx: MiddlewareContext[Any], call_next: Any) -> Any:
        rounds.append("retry" if ctx.is_retry else "first")
        return await call_next(ctx)

    child = Server("child", middleware=[child_mw])

    @child.tool
    async def ask(ctx: Context) -> str:
        assert ctx.server is child
        return f"child asked {(await ctx.elicit('Name?', NAME)).content['name']}"  # type: ignore[index]

    @child.resource("data://notes/{n}")
    async def note(n: str) -> str:
        return f"note {n}"

    @child.prompt
    async def where(ctx: Context) -> str:
        return f"{len(await ctx.list_roots())} root(s)"

    parent = Server("parent")
    parent.mount(child, prefix="kid")
    return parent, rounds


async def test_a_mounted_server_in_2026_requests() -> None:
    parent, rounds = _parent_and_child()
    async with open_client(parent, handlers=HANDLERS, mode=MODERN) as client:
        assert _text(await client.call_tool("kid_ask", {})) == "child asked Ada"
        assert rounds == ["first", "retry"]  # the child's middleware, once per round
        read = await client.read_resource("data://kid/notes/7")
        assert (read.contents[0].uri, read.contents[0].text) == (  # type: ignore[union-attr]
            "data://kid/notes/7", "note 7")
        prompt = await client.get_prompt("kid_where")
        assert prompt.messages[0].content.text == "1 root(s)"  # type: ignore[union-attr]
        with pytest.raises(RequestError) as missing:
            await client.read_resource("data://kid/nope")
        assert (missing.value.code, missing.value.data) == (-32602, {"uri": "data://kid/nope"})
        for method, field in (("tools/list", "tools"), ("prompts/list", "prompts"),
                              ("resources/templates/list", "resource_templates")):
            listed = await client.request(method)
            assert listed.extra["ttlMs"] == 0 and listed.extra["cacheScope"] == "private"
            assert getattr(listed, field), method
        names = [tool.name for tool in await client.list_all_tools()]
        assert names == ["kid_ask"]


# -- threads ---------------------------------------------------------------------------


async def test_a_plain_def_tool_asks_from_its_thread_in_2026() -> None:
    server = Server("threads")

    @server.tool
    def ask(ctx: Context) -> str:
        who = trio.from_thread.run(ctx.elicit, "Name?", NAME)
        link = trio.from_thread.run(ctx.elicit_url, "Sign in", "https://x.test/login", "e1")
        return f"{who.content['name']} ({link.action})"  # type: ignore[index]

    async with open_client(server, handlers=HANDLERS.__class__(
            elicitation=_elicitation, elicitation_modes=("form", "url")),
            mode=MODERN) as client:
        assert _text(await client.call_tool("ask", {})) == "Ada (accept)"


# -- custom routes ---------------------------------------------------------------------


async def test_custom_routes_beside_2026_requests() -> None:
    from mcpactor.transports.http_client import HttpPool

    server = Server("routes")

    @server.custom_route("/health")
    async def health(request: Any) -> dict[str, str]:
        return {"status": "ok"}

    @server.tool
    async def ask(ctx: Context) -> str:
        return str((await ctx.elicit("Name?", NAME)).content["name"])  # type: ignore[index]

    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status))
        pool = HttpPool()
        try:
            response = await pool.request("GET", url.replace("/mcp", "/health"))
            assert (response.status, await response.read()) == (200, b'{"status":"ok"}')
            await response.aclose()
        finally:
            await pool.aclose()
        async with connect_http(url, handlers=HANDLERS) as client:
            assert client.protocol_version == MODERN
            assert _text(await client.call_tool("ask", {})) == "Ada"
        nursery.cancel_scope.cancel()
