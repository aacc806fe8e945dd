"""Shared helpers for tests/http: a small server, a running app on 127.0.0.1, raw HTTP.

Everything binds 127.0.0.1 on a random free port; every wait is bounded.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio

from mcpactor import Context, Server
from mcpactor.transports.http_client import HttpPool, HttpResponse
from mcpactor.transports.http_server import HttpOptions, McpHttpApp, serve_app
from mcpactor.transports.sse import SseEvent, SseParser

ACCEPT_BOTH = "application/json, text/event-stream"
LATEST = "2025-11-25"


def make_server() -> Server:
    """A server with just what the HTTP tests need."""
    server = Server("http-test-server", version="1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def count(n: int, delay: float, ctx: Context) -> str:
        """Report progress 1..n, ``delay`` seconds apart."""
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i}")
            await trio.sleep(delay)
        return f"counted to {n}"

    @server.tool()
    async def poll(ctx: Context) -> str:
        """Close the SSE stream mid-call (SSE polling), then answer."""
        await ctx.close_sse_stream()
        await trio.sleep(0.05)
        return "answered after the stream closed"

    @server.tool()
    async def ask(prompt: str, ctx: Context) -> str:
        """Sample the client's model (a server-to-client request during a call)."""
        result = await ctx.sample(prompt, max_tokens=10, timeout=5)
        content = result.content
        return f"model said: {getattr(content, 'text', content)}"

    @server.tool()
    async def hang() -> str:
        """Never returns by itself (in-flight limit tests)."""
        await trio.sleep_forever()
        return "unreachable"

    return server


@asynccontextmanager
async def running_app(
    server: Server | None = None, *, http_server: str = "h11", **options: Any
) -> AsyncIterator[tuple[McpHttpApp, str]]:
    """Serve an app on 127.0.0.1:<random>; yields ``(app, endpoint URL)``."""
    app = McpHttpApp(server or make_server(), HttpOptions(**options))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_app(app, host="127.0.0.1", port=0, quiet=True,
                                          server=http_server, task_status=task_status)
        )
        try:
            yield app, url
        finally:
            nursery.cancel_scope.cancel()


async def wait_until(cond: Callable[[], object], timeout: float = 5.0) -> None:
    """Poll ``cond`` until true; state owned by other tasks has no event to wait on."""
    with trio.fail_after(timeout):
        while not cond():  # noqa: ASYNC110 - polling state that offers no event
            await trio.sleep(0.01)


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def init_body(version: str = LATEST, rid: int | str = 1) -> bytes:
    """An initialize request."""
    return orjson.dumps({
        "jsonrpc": "2.0", "id": rid, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "0"}},
    })


def request_body(rid: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    """A JSON-RPC request."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


class RawClient:
    """Hand-made HTTP requests against the endpoint (for status-code tests)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pool = HttpPool()
        self.session_id: str | None = None
        self.version = LATEST

    def headers(self, **extra: str) -> list[tuple[str, str]]:
        """Default headers of a well-behaved client, plus ``extra`` (``_`` → ``-``)."""
        h = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
        if self.session_id is not None:
            h["mcp-session-id"] = self.session_id
            h["mcp-protocol-version"] = self.version
        for k, v in extra.items():
            h[k.replace("_", "-")] = v
        return [(k, v) for k, v in h.items() if v != ""]

    async def post(self, body: bytes, headers: list[tuple[str, str]] | None = None) -> HttpResponse:
        """POST and return the response (headers read)."""
        return await self.pool.request("POST", self.url, headers or self.headers(), body)

    async def simple(
        self, method: str, body: bytes | None = None, headers: list[tuple[str, str]] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """One complete exchange: ``(status, headers, body)``."""
        resp = await self.pool.request(method, self.url, headers or self.headers(), body)
        data = await resp.read()
        await resp.aclose()
        return resp.status, resp.headers, data

    async def initialize(self, version: str = LATEST) -> dict[str, Any]:
        """Initialize a session and send ``initialized``; returns the result."""
        status, headers, data = await self.simple("POST", init_body(version))
        assert status == 200, (status, data)
        self.session_id = headers["mcp-session-id"]
        self.version = version
        status, _, _ = await self.simple(
            "POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        )
        assert status == 202
        return dict(orjson.loads(data)["result"])

    async def aclose(self) -> None:
        """Drop idle connections."""
        await self.pool.aclose()


async def read_events(resp: HttpResponse, until_id: Any = None) -> list[SseEvent]:
    """SSE events until the response ends (or the response for ``until_id`` arrived)."""
    parser = SseParser()
    out: list[SseEvent] = []
    async for chunk in resp.iter_bytes():
        for ev in parser.feed(chunk):
            out.append(ev)
            if until_id is not None and ev.data and orjson.loads(ev.data).get("id") == until_id:
                return out
    return out


def messages(events: list[SseEvent]) -> list[dict[str, Any]]:
    """The JSON-RPC messages carried by events (priming events have no data)."""
    return [orjson.loads(e.data) for e in events if e.data.strip()]


# -- raw HTTP/1.1 over blocking sockets (for tests that hold many connections) ----------


def raw_post(body: bytes, sid: bytes | None = None, *, chunked: bool = False,
             version: str | None = None) -> bytes:
    """The bytes of a POST to /mcp (``chunked``: the body as one chunk, the h11 path)."""
    extra = b"" if sid is None else b"Mcp-Session-Id: " + sid + b"\r\n"
    if version is not None:
        extra += b"Mcp-Protocol-Version: " + version.encode() + b"\r\n"
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" + extra)
    if chunked:
        return head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_raw_response(s: socket.socket, buf: bytes = b"") -> tuple[bytes, bytes, bytes]:
    """One response from a blocking socket: ``(head, body, bytes after it)``; raises
    EOFError if the server closed the connection before the response was complete."""

    def more() -> bytes:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError(buf)
        return chunk

    while b"\r\n\r\n" not in buf:
        buf += more()
    head, _, rest = buf.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += more()
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            while len(rest) < size + 2:
                rest += more()
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                return head, body, rest
    length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length")), b"0"))
    while len(rest) < length:
        rest += more()
    return head, rest[:length], rest[length:]


def session_id_of(head: bytes) -> bytes:
    """The ``Mcp-Session-Id`` of a response head."""
    return next(line.split(b": ")[1] for line in head.split(b"\r\n")
                if line.lower().startswith(b"mcp-session-id"))

