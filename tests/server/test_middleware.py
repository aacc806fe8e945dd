"""Middleware: wraps every request and notification, in order, typed; can change the
params, answer by itself, or refuse with an error."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import (
    ClientHandlers,
    Context,
    McpError,
    Middleware,
    MiddlewareContext,
    RequestError,
    Server,
    ToolError,
)
from mcpactor.protocol import types as t
from mcpactor.server import CallNext, LoggingMiddleware, RateLimit, TimingMiddleware
from mcpactor.testing import open_client


def app() -> Server:
    server = Server("mw")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def echo(text: str) -> str:
        return text

    @server.tool
    async def nap(seconds: float) -> str:
        await trio.sleep(seconds)
        return "rested"

    @server.resource("data://x")
    async def x() -> str:
        return "x"

    return server


async def test_every_request_passes_in_order_and_results_come_back_typed() -> None:
    seen: list[str] = []

    async def outer(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        seen.append(f"outer> {ctx.method}")
        result = await call_next(ctx)
        seen.append(f"outer< {type(result).__name__}")
        return result

    async def inner(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        seen.append(f"inner> {ctx.method} id={ctx.request_id} session={ctx.session.id[:0]}")
        return await call_next(ctx)

    server = app()
    server.add_middleware(outer)
    server.add_middleware(inner)
    async with open_client(server) as client:
        await client.call_tool("echo", {"text": "hi"})
        await client.list_tools()
        await client.read_resource("data://x")
    assert seen == [
        "outer> tools/call", "inner> tools/call id=2 session=", "outer< CallToolResult",
        "outer> tools/list", "inner> tools/list id=3 session=", "outer< ListToolsResult",
        "outer> resources/read", "inner> resources/read id=4 session=",
        "outer< ReadResourceResult",
    ]


async def test_a_middleware_can_rewrite_params_answer_itself_or_refuse() -> None:
    server = app()

    @server.add_middleware
    async def policy(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        if ctx.method == "tools/call":
            params: t.CallToolRequestParams = ctx.params
            if params.name == "add":
                args = dict(params.arguments or {})
                args["b"] = args.get("b", 0) * 10
                import attrs

                return await call_next(ctx.replace(params=attrs.evolve(params, arguments=args)))
            if params.name == "echo" and (params.arguments or {}).get("text") == "cached":
                return t.CallToolResult(content=[t.TextContent(text="from the cache")])
            if params.name == "echo" and (params.arguments or {}).get("text") == "secret":
                raise ToolError("echo of secrets is not allowed")
            if params.name == "nap":
                raise McpError("Unauthorized: no napping", code=-32001, data={"why": "policy"})
        return await call_next(ctx)

    async with open_client(server) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 21}
        cached = await client.call_tool("echo", {"text": "cached"})
        assert cached.content[0].text == "from the cache"  # type: ignore[union-attr]
        refused = await client.call_tool("echo", {"text": "secret"})
        assert refused.is_error
        assert refused.content[0].text == "echo of secrets is not allowed"  # type: ignore[union-attr]
        with pytest.raises(RequestError) as info:
            await client.call_tool("nap", {"seconds": 0})
    assert (info.value.code, info.value.data) == (-32001, {"why": "policy"})


async def test_the_context_talks_to_the_client_and_notifications_pass_too() -> None:
    server = app()
    notified: list[str] = []

    @server.on_roots_changed
    async def roots_changed(session: Any) -> None:
        notified.append("handler")

    @server.add_middleware
    async def audit(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        if ctx.is_request:
            await ctx.context.info(f"audit: {ctx.method}")
        else:
            notified.append(f"middleware {ctx.method}")
            with pytest.raises(RuntimeError, match="notification"):
                ctx.context  # noqa: B018
        return await call_next(ctx)

    logs: list[Any] = []
    handlers = ClientHandlers(on_log=lambda p: logs.append(p.data), roots=[])
    async with open_client(server, handlers=handlers) as client:
        await client.call_tool("echo", {"text": "x"})
        await client.send_roots_list_changed()
        await client.ping()
        await trio.sleep(0.05)
    assert logs == ["audit: tools/call"]
    assert notified == ["middleware notifications/roots/list_changed", "handler"]


async def test_a_middleware_class_hooks_one_kind_of_message() -> None:
    calls: list[str] = []

    class Counting(Middleware):
        async def on_message(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
            calls.append(f"message {ctx.method}")
            return await call_next(ctx)

        async def on_request(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
            calls.append("request")
            return await call_next(ctx)

        async def on_call_tool(self, ctx: MiddlewareContext[t.CallToolRequestParams],
                               call_next: CallNext) -> Any:
            calls.append(f"tool {ctx.params.name}")
            result = await call_next(ctx)
            assert isinstance(result, t.CallToolResult)
            return result

        async def on_list_tools(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
            result = await call_next(ctx)
            # Hide a tool from the listing.
            import attrs

            return attrs.evolve(result, tools=[x for x in result.tools if x.name != "nap"])

    server = app()
    server.add_middleware(Counting())
    async with open_client(server) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert calls == ["message tools/call", "request", "tool add",
                     "message tools/list", "request"]
    assert names == ["add", "echo"]


async def test_rate_limit_refuses_past_the_burst_on_trio_time(
        autojump_clock: trio.testing.MockClock) -> None:
    server = app()
    server.add_middleware(RateLimit(1, burst=2, methods=["tools/call"]))
    async with open_client(server) as client:
        await client.call_tool("echo", {"text": "1"})
        await client.call_tool("echo", {"text": "2"})
        await client.list_tools()  # not limited
        with pytest.raises(RequestError) as info:
            await client.call_tool("echo", {"text": "3"})
        assert info.value.code == -32005
        assert info.value.data == {"retryAfter": pytest.approx(1.0, abs=0.01)}
        await trio.sleep(1)
        await client.call_tool("echo", {"text": "4"})


async def test_timing_and_logging(autojump_clock: trio.testing.MockClock,
                                  caplog: pytest.LogCaptureFixture) -> None:
    timings: list[tuple[str, float]] = []
    server = app()
    server.add_middleware(LoggingMiddleware())
    server.add_middleware(TimingMiddleware(lambda ctx, s: timings.append((ctx.method, s))))
    with caplog.at_level(logging.INFO, logger="mcpactor.server.requests"):
        async with open_client(server) as client:
            await client.call_tool("nap", {"seconds": 5})
    assert timings == [("tools/call", pytest.approx(5.0))]
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpactor.server.requests"]
    assert any("→ tools/call nap (id 2)" in line for line in lines)
    assert any("← tools/call nap ok" in line for line in lines)


async def test_middleware_added_while_serving_applies_from_the_next_request() -> None:
    server = app()
    async with open_client(server) as client:
        assert (await client.call_tool("echo", {"text": "a"})).content[0].text == "a"  # type: ignore[union-attr]

        async def shout(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
            result = await call_next(ctx)
            if ctx.method == "tools/call":
                import attrs

                return attrs.evolve(result, content=[
                    t.TextContent(text=c.text.upper()) for c in result.content])
            return result

        server.add_middleware(shout)
        assert (await client.call_tool("echo", {"text": "b"})).content[0].text == "B"  # type: ignore[union-attr]


def test_middleware_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        Server("x").add_middleware("not a middleware")  # type: ignore[type-var]


async def test_a_middleware_sees_the_lifespan_and_the_request_context() -> None:
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[set[str]]:
        yield {"alice"}

    server: Server[set[str]] = Server("auth", lifespan=lifespan)

    @server.tool
    async def whoami(ctx: Context) -> str:
        return str(ctx.meta)

    @server.add_middleware
    async def allow_list(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        user = (ctx.raw_params or {}).get("_meta", {}).get("user")
        if ctx.method == "tools/call" and user not in ctx.lifespan:
            raise McpError(f"Forbidden: {user} is not on the list", code=-32003)
        return await call_next(ctx)

    async with open_client(server) as client:
        ok = await client.call_tool("whoami", {}, meta={"user": "alice"})
        assert "alice" in ok.content[0].text  # type: ignore[union-attr]
        with pytest.raises(RequestError, match="bob is not on the list"):
            await client.call_tool("whoami", {}, meta={"user": "bob"})
