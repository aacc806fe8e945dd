"""Serving from inside one's own Trio program (``serve_http``, ``serve_websocket``,
``run_async``), custom HTTP routes, and ``asgi_app()`` under hypercorn's Trio worker:
all over real sockets on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio

from mcpactor import Context, HttpRequest, HttpResponse, Server, connect_http, connect_websocket
from mcpactor.transports.http_client import HttpPool


def app(events: list[str] | None = None) -> Server:
    events = events if events is not None else []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, int]]:
        events.append("up")
        try:
            yield {"visits": 0}
        finally:
            events.append("down")

    server = Server("served", lifespan=lifespan)

    @server.tool
    async def visit(ctx: Context) -> int:
        ctx.lifespan["visits"] += 1
        return int(ctx.lifespan["visits"])

    @server.custom_route("/health")
    async def health(request: HttpRequest) -> dict[str, Any]:
        return {"status": "ok", "query": request.query_params}

    @server.custom_route("/items/{item_id}", methods=["GET", "POST"])
    async def item(request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            body = await request.json()
            return HttpResponse.json({"id": request.path_params["item_id"], "got": body},
                                     status=201, headers={"X-Item": "made"})
        return HttpResponse.text(f"item {request.path_params['item_id']}")

    @server.custom_route("/sync")
    def sync_route(request: HttpRequest) -> bytes:
        return b"\x00binary"

    @server.custom_route("/empty", methods=["DELETE"])
    async def empty(request: HttpRequest) -> None:
        return None

    @server.custom_route("/broken")
    async def broken(request: HttpRequest) -> str:
        raise RuntimeError("bug in a route")

    return server


async def _get(pool: HttpPool, method: str, url: str, body: bytes | None = None,
               headers: list[tuple[str, str]] | None = None) -> tuple[int, dict[str, str], bytes]:
    response = await pool.request(method, url, headers or [], body)
    data = await response.read()
    await response.aclose()
    return response.status, response.headers, data


async def test_custom_routes_beside_the_mcp_endpoint() -> None:
    events: list[str] = []
    server = app(events)
    pool = HttpPool()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status, max_body_size=1000))
        base = url.rsplit("/mcp", 1)[0]
        status, headers, body = await _get(pool, "GET", base + "/health?probe=1")
        assert (status, orjson.loads(body)) == (200, {"status": "ok", "query": {"probe": "1"}})
        assert headers["content-type"] == "application/json"
        status, _, body = await _get(pool, "GET", base + "/items/42")
        assert (status, body) == (200, b"item 42")
        status, headers, body = await _get(
            pool, "POST", base + "/items/7", orjson.dumps({"name": "x"}),
            [("content-type", "application/json")])
        assert (status, orjson.loads(body), headers["x-item"]) == (
            201, {"id": "7", "got": {"name": "x"}}, "made")
        status, headers, body = await _get(pool, "GET", base + "/sync")
        assert (status, body, headers["content-type"]) == (
            200, b"\x00binary", "application/octet-stream")
        assert (await _get(pool, "DELETE", base + "/empty"))[0] == 204
        status, headers, _ = await _get(pool, "PUT", base + "/items/7")
        assert (status, headers["allow"]) == (405, "GET, POST")
        assert (await _get(pool, "GET", base + "/nowhere"))[0] == 404
        assert (await _get(pool, "POST", base + "/items/1", b"x" * 5000))[0] == 413
        assert (await _get(pool, "POST", base + "/items/1", b"not json"))[0] == 400
        assert (await _get(pool, "GET", base + "/broken"))[0] == 500
        # DNS-rebinding protection covers the routes too.
        assert (await _get(pool, "GET", base + "/health", None,
                           [("host", "evil.example")]))[0] == 421
        # And the MCP endpoint is served from the same program, in the lifespan.
        async with connect_http(url) as client:
            assert (await client.call_tool("visit", {})).data == {"result": 1}
        assert events == ["up"]
        nursery.cancel_scope.cancel()
    await pool.aclose()
    assert events == ["up", "down"]


async def test_a_route_can_require_the_bearer_token() -> None:
    from mcpactor.auth.resource_server import ResourceServer
    from mcpactor.auth.verifier import AccessToken, StaticTokenVerifier

    server = Server("guarded")

    @server.custom_route("/admin", auth=True)
    async def admin(request: HttpRequest) -> str:
        return "admin page"

    @server.custom_route("/public")
    async def public(request: HttpRequest) -> str:
        return "public page"

    pool = HttpPool()
    async with trio.open_nursery() as nursery:
        port = _free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        auth = ResourceServer(
            resource=resource, authorization_servers=["https://auth.example"],
            verifier=StaticTokenVerifier({"good": AccessToken(
                token="good", subject="ada", client_id="c", scopes=frozenset(),
                audience=(resource,))}))
        await nursery.start(lambda task_status: server.serve_http(
            port=port, quiet=True, auth=auth, task_status=task_status))
        base = f"http://127.0.0.1:{port}"
        assert (await _get(pool, "GET", base + "/public"))[0] == 200
        status, headers, _ = await _get(pool, "GET", base + "/admin")
        assert status == 401 and "bearer" in headers["www-authenticate"].lower()
        status, _, body = await _get(pool, "GET", base + "/admin", None,
                                     [("authorization", "Bearer good")])
        assert (status, body) == (200, b"admin page")
        nursery.cancel_scope.cancel()
    await pool.aclose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_mounted_servers_routes_are_served() -> None:
    main, child = Server("main"), Server("child")

    @child.custom_route("/child-health")
    async def child_health(request: HttpRequest) -> str:
        return "child ok"

    main.mount(child, prefix="c")
    pool = HttpPool()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: main.serve_http(
            port=0, quiet=True, task_status=task_status))
        status, _, body = await _get(pool, "GET", url.replace("/mcp", "/child-health"))
        assert (status, body) == (200, b"child ok")
        nursery.cancel_scope.cancel()
    await pool.aclose()


async def test_run_async_and_serve_websocket_inside_a_trio_program() -> None:
    events: list[str] = []
    server = app(events)
    async with trio.open_nursery() as nursery:
        http_url = await nursery.start(lambda task_status: server.run_async(
            "http", port=0, quiet=True, task_status=task_status))
        ws_url = await nursery.start(lambda task_status: server.serve_websocket(
            port=0, quiet=True, task_status=task_status))
        async with connect_http(http_url) as a, connect_websocket(ws_url) as b:
            assert (await a.call_tool("visit", {})).data == {"result": 1}
            assert (await b.call_tool("visit", {})).data == {"result": 2}  # one lifespan
        nursery.cancel_scope.cancel()
    assert events == ["up", "down"]


async def test_asgi_app_under_hypercorn_trio() -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    events: list[str] = []
    server = app(events)
    asgi = server.asgi_app()
    config = Config()
    port = _free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    pool = HttpPool()
    async with trio.open_nursery() as nursery:
        await nursery.start(lambda task_status: serve(asgi, config,  # type: ignore[arg-type]
                                                      task_status=task_status))
        assert events == ["up"]  # the ASGI lifespan entered the server's
        url = f"http://127.0.0.1:{port}/mcp"
        async with connect_http(url) as client:
            assert (await client.call_tool("visit", {})).data == {"result": 1}
        status, _, body = await _get(pool, "GET", f"http://127.0.0.1:{port}/health")
        assert status == 200 and orjson.loads(body)["status"] == "ok"
        nursery.cancel_scope.cancel()
    await pool.aclose()
    assert events == ["up", "down"]


async def test_asgi_app_without_its_lifespan_says_so() -> None:
    asgi = app().asgi_app()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asgi({"type": "http", "method": "GET", "path": "/mcp", "headers": []}, receive, send)
    assert sent[0]["status"] == 503
    assert b"lifespan" in sent[1]["body"]


async def test_a_route_ported_from_starlette_keeps_its_body() -> None:
    """FastMCP and SDK routes take a Starlette Request and return a Starlette response:
    the same body works here."""
    from starlette.responses import JSONResponse, PlainTextResponse

    server = Server("ported")

    @server.custom_route("/echo", methods=["POST"])
    async def echo(request: Any) -> Any:
        data = await request.json()
        raw = await request.body()
        return JSONResponse({"got": data, "size": len(raw),
                             "q": request.query_params.get("q")}, status_code=202)

    @server.custom_route("/plain")
    async def plain(request: Any) -> Any:
        return PlainTextResponse("plain text", headers={"X-Ported": "yes"})

    pool = HttpPool()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status))
        base = url.rsplit("/mcp", 1)[0]
        status, headers, body = await _get(pool, "POST", base + "/echo?q=1", b'{"a": 1}')
        assert (status, orjson.loads(body)) == (202, {"got": {"a": 1}, "size": 8, "q": "1"})
        assert headers["content-type"] == "application/json"
        status, headers, body = await _get(pool, "GET", base + "/plain")
        assert (status, body, headers["x-ported"]) == (200, b"plain text", "yes")
        assert headers["content-type"].startswith("text/plain")
        nursery.cancel_scope.cancel()
    await pool.aclose()


def test_unknown_transport_in_run_async() -> None:
    with pytest.raises(ValueError, match="unknown transport"):
        trio.run(Server("x").run_async, "carrier-pigeon")
