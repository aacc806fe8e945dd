"""Spans and metrics by the MCP semantic conventions, checked with the OpenTelemetry
SDK's in-memory exporters, client and server in one Trio run (an in-memory pair)."""

from __future__ import annotations

import pytest
import trio
from opentelemetry import baggage, context, trace
from opentelemetry.trace import SpanKind, StatusCode

from mcpactor import Context, Server
from mcpactor.observability import semconv
from mcpactor.protocol import jsonrpc, versions
from mcpactor.protocol.errors import RequestError, RequestTimeout
from mcpactor.server import ToolError
from mcpactor.testing import open_client

from .otel_support import collecting

server = Server("observed", version="1.0.0")
user_tracer = trace.get_tracer("user-code")
seen: dict[str, object] = {}


@server.tool
async def add(a: int, b: int) -> int:
    """Add, inside a span of the tool's own."""
    with user_tracer.start_as_current_span("db.query"):
        seen["baggage"] = baggage.get_baggage("tenant")
        return a + b


@server.tool
async def broken(reason: str) -> str:
    """An isError result."""
    raise ToolError(reason)


@server.tool
async def crash() -> str:
    """An unexpected exception (an isError result too: tools never raise -32603)."""
    raise RuntimeError("boom")


@server.tool
async def steps(n: int, ctx: Context) -> str:
    """Progress, then done."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i}")
    return "done"


@server.tool
async def sleepy(seconds: float) -> str:
    """Waits (to be cancelled)."""
    await trio.sleep(seconds)
    return "woke"


@server.resource("notes://today", mime_type="text/plain")
async def today() -> str:
    return "buy milk"


@server.prompt
async def greet(name: str) -> str:
    """A prompt."""
    return f"hello {name}"


def _attrs(span: object) -> dict[str, object]:
    return dict(span.attributes or {})  # type: ignore[attr-defined]


async def test_tool_call_spans_names_attributes_and_parents() -> None:
    with collecting() as c:
        async with open_client(server) as client:
            with user_tracer.start_as_current_span("agent") as agent:
                ctx = baggage.set_baggage("tenant", "acme")
                token = context.attach(ctx)
                try:
                    result = await client.call_tool("add", {"a": 2, "b": 3})
                finally:
                    context.detach(token)
            assert result.data == {"result": 5}
        client_span = c.one("tools/call add", "CLIENT")
        server_span = c.one("tools/call add", "SERVER")
        query = c.one("db.query", "INTERNAL")
        # One trace: agent -> client span -> server span -> the tool's own span.
        trace_id = agent.get_span_context().trace_id
        assert {client_span.context.trace_id, server_span.context.trace_id,
                query.context.trace_id} == {trace_id}
        assert client_span.parent.span_id == agent.get_span_context().span_id
        assert server_span.parent.span_id == client_span.context.span_id
        assert server_span.parent.is_remote
        assert query.parent.span_id == server_span.context.span_id
        # Baggage travelled too, and reached the tool's code.
        assert seen["baggage"] == "acme"
        for span in (client_span, server_span):
            a = _attrs(span)
            assert a[semconv.METHOD] == "tools/call"
            assert a[semconv.TOOL_NAME] == "add"
            assert a[semconv.OPERATION_NAME] == "execute_tool"
            assert a[semconv.PROTOCOL_VERSION] == client.protocol_version
            assert isinstance(a[semconv.SESSION_ID], str)
            assert a[semconv.REQUEST_ID] == _attrs(client_span)[semconv.REQUEST_ID]
            assert semconv.ERROR_TYPE not in a
            assert span.status.status_code is StatusCode.UNSET
        assert client_span.kind is SpanKind.CLIENT and server_span.kind is SpanKind.SERVER
        # initialize: a client span and the server's (answered by its connection).
        init_client = c.one("initialize", "CLIENT")
        init_server = c.one("initialize", "SERVER")
        assert init_server.parent.span_id == init_client.context.span_id
        assert _attrs(init_server)[semconv.REQUEST_ID] == "1"
        assert c.one("notifications/initialized", "SERVER")
        assert c.one("notifications/initialized", "CLIENT")


async def test_errors_by_the_conventions() -> None:
    with collecting() as c:
        async with open_client(server) as client:
            bad = await client.call_tool("broken", {"reason": "no such city"})
            assert bad.is_error
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error
            with pytest.raises(RequestError) as unknown:
                await client.call_tool("nope", {})
            # A method the server does not know (our client refuses to send it: raw).
            await client.session.send_raw(
                jsonrpc.encode_request(999, "no/such/method", {"_meta": {}}))
            await client.ping()
            with pytest.raises(RequestError):
                await client.read_resource("notes://missing")
        for side in ("CLIENT", "SERVER"):
            span = c.one("tools/call broken", side)
            assert _attrs(span)[semconv.ERROR_TYPE] == semconv.TOOL_ERROR
            assert span.status.status_code is StatusCode.ERROR
            assert "no such city" in (span.status.description or "")
            span = c.one("tools/call nope", side)
            code = str(unknown.value.code)
            assert _attrs(span)[semconv.ERROR_TYPE] == code == "-32602"
            assert _attrs(span)[semconv.STATUS_CODE] == code
            assert span.status.status_code is StatusCode.ERROR
            assert "Unknown tool" in (span.status.description or "")
            span = c.one("resources/read", side)
            assert _attrs(span)[semconv.RESOURCE_URI] == "notes://missing"
            assert span.status.status_code is StatusCode.ERROR
        assert _attrs(c.one("tools/call crash", "SERVER"))[semconv.ERROR_TYPE] == "tool_error"
        # A method the server's connection refuses: its span has the refusal's code.
        refused = c.one("no/such/method", "SERVER")
        assert _attrs(refused)[semconv.ERROR_TYPE] == "-32601"


async def test_progress_and_cancellation_are_span_events() -> None:
    with collecting() as c:
        async with open_client(server) as client:
            got: list[float] = []
            await client.call_tool("steps", {"n": 3}, on_progress=lambda p, t, m: got.append(p))
            assert got == [1, 2, 3]
            with pytest.raises(RequestTimeout):
                await client.call_tool("sleepy", {"seconds": 30}, timeout=0.2)
            await trio.sleep(0.1)  # the server takes the cancellation
        for side in ("SERVER", "CLIENT"):
            events = c.one("tools/call steps", side).events
            progress = [e for e in events if e.name == semconv.EVENT_PROGRESS]
            assert [e.attributes["mcp.progress.value"] for e in progress] == [1.0, 2.0, 3.0]
            assert progress[0].attributes["mcp.progress.total"] == 3.0
        client_span = c.one("tools/call sleepy", "CLIENT")
        assert _attrs(client_span)[semconv.ERROR_TYPE] == semconv.TIMEOUT
        assert any(e.name == semconv.EVENT_CANCELLED for e in client_span.events)
        server_span = c.one("tools/call sleepy", "SERVER")
        assert _attrs(server_span)[semconv.ERROR_TYPE] == semconv.CANCELLED
        cancelled = [e for e in server_span.events if e.name == semconv.EVENT_CANCELLED]
        assert cancelled and cancelled[0].attributes["mcp.cancel.by"] == "peer"
        assert c.one("notifications/cancelled", "SERVER")


async def test_the_four_histograms() -> None:
    with collecting() as c:
        async with open_client(server) as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            await client.get_prompt("greet", {"name": "x"})
        points = c.histograms()
        for name in (semconv.SERVER_OPERATION_DURATION, semconv.CLIENT_OPERATION_DURATION,
                     semconv.SERVER_SESSION_DURATION, semconv.CLIENT_SESSION_DURATION):
            assert points.get(name), name
            for point in points[name]:
                assert list(point.explicit_bounds) == list(semconv.DURATION_BUCKETS)
        by_method = {(p.attributes[semconv.METHOD], p.attributes.get(semconv.TOOL_NAME),
                      p.attributes.get(semconv.PROMPT_NAME)): p
                     for p in points[semconv.SERVER_OPERATION_DURATION]}
        assert by_method[("tools/call", "add", None)].count == 1
        assert by_method[("prompts/get", None, "greet")].count == 1
        # Span-only, high-cardinality attributes stay out of the metrics.
        for p in points[semconv.SERVER_OPERATION_DURATION]:
            assert semconv.SESSION_ID not in p.attributes
            assert semconv.REQUEST_ID not in p.attributes
        session = points[semconv.SERVER_SESSION_DURATION][0]
        assert session.count == 1 and semconv.ERROR_TYPE not in session.attributes


async def test_prompt_span_name_and_sampling_nests_under_the_tool() -> None:
    from mcpactor.client import ClientHandlers
    from mcpactor.protocol import types as t

    nested = Server("nested")

    @nested.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.sample("hi", max_tokens=5)
        return str(answer.content.text)

    async def sampling(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", model="m",
                                     content=t.TextContent(text="yo"))

    with collecting() as c:
        async with open_client(nested, handlers=ClientHandlers(sampling=sampling)) as client:
            assert (await client.call_tool("ask", {})).content[0].text == "yo"
        tool = c.one("tools/call ask", "SERVER")
        ask_out = c.one("sampling/createMessage", "CLIENT")   # the server asks
        ask_in = c.one("sampling/createMessage", "SERVER")    # the client answers
        assert ask_out.parent.span_id == tool.context.span_id
        assert ask_in.parent.span_id == ask_out.context.span_id
        assert ask_in.context.trace_id == tool.context.trace_id


async def test_off_means_no_observer() -> None:
    async with open_client(server) as client:
        assert client.session.observer is None
        assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}


@pytest.mark.parametrize("version", versions.ALL_VERSIONS)
async def test_every_revision_propagates(version: str) -> None:
    # Both eras: the handshake's revisions and the stateless one (no initialize).
    era = {"mode": version} if version in versions.MODERN_VERSIONS else {
        "protocol_version": version}
    with collecting() as c:
        async with open_client(server, **era) as client:
            assert client.protocol_version == version
            await client.call_tool("add", {"a": 1, "b": 2})
        ours, theirs = c.one("tools/call add", "CLIENT"), c.one("tools/call add", "SERVER")
        assert theirs.parent.span_id == ours.context.span_id
        assert theirs.context.trace_id == ours.context.trace_id
        assert _attrs(theirs)[semconv.PROTOCOL_VERSION] == version


async def test_websocket_propagates() -> None:
    from mcpactor import connect_websocket
    from mcpactor.transports.websocket import serve_websocket

    with collecting() as c, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve_websocket(server, port=0, quiet=True,
                                                    task_status=task_status))
            async with connect_websocket(url) as client:
                await client.call_tool("add", {"a": 2, "b": 2})
            nursery.cancel_scope.cancel()
        ours, theirs = c.one("tools/call add", "CLIENT"), c.one("tools/call add", "SERVER")
        assert theirs.parent.span_id == ours.context.span_id
        for span in (ours, theirs):
            assert _attrs(span)[semconv.NETWORK_TRANSPORT] == "tcp"
            assert _attrs(span)[semconv.NETWORK_PROTOCOL_NAME] == "websocket"
