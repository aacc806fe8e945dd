"""Custom HTTP routes served beside the MCP endpoint: ``@server.custom_route("/health")``.

A handler takes an :class:`HttpRequest` and returns an :class:`HttpResponse`, or a
``str`` (text/plain), ``bytes`` (application/octet-stream), a dict or list (JSON), None
(204 No Content), or a Starlette response (when porting a route). ``async def`` or plain ``def`` (run in a worker thread). A
``{name}`` segment of the path matches one segment of the request's
(``request.path_params["name"]``). A path that matches with another method is 405
with ``Allow``; a body past ``HttpOptions.max_body_size`` is 413; a handler that raises
is 500 (logged) and the server goes on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs

import attrs
import orjson
import trio

from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Scope, Send
from mcpactor.transports.http_rules import HttpError

__all__ = ["HttpRequest", "HttpResponse", "Route", "RouteHandler", "serve_route"]

log = logging.getLogger("mcpactor.http")


@attrs.frozen(kw_only=True)
class HttpRequest:
    """An HTTP request to a custom route, its body read. The names a Starlette handler
    uses work (``await request.body()``, ``await request.json()``,
    ``request.query_params``, ``request.path_params``, ``request.headers``), so a
    FastMCP or SDK route ports with its body unchanged."""

    method: str
    path: str
    #: Header names in lowercase; repeated headers joined with ", ".
    headers: Mapping[str, str]
    query_string: bytes = b""
    #: The body's bytes (also ``await request.body()``).
    content: bytes = b""
    #: The ``{name}`` segments of the route's path.
    path_params: Mapping[str, str] = attrs.Factory(dict)
    #: ``(host, port)`` of the peer, when the server knows it.
    client: tuple[str, int] | None = None

    @property
    def query_params(self) -> dict[str, str]:
        """The query string's parameters (the first value of each)."""
        return {k: v[0] for k, v in self.query_all.items()}

    @property
    def query_all(self) -> dict[str, list[str]]:
        """The query string's parameters, every value."""
        return parse_qs(self.query_string.decode("latin-1"), keep_blank_values=True)

    async def body(self) -> bytes:
        """The body (read already: this never waits)."""
        return self.content

    async def json(self) -> Any:
        """The body as JSON (a :class:`BadRequest`, answered 400, when it is not)."""
        try:
            return orjson.loads(self.content)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.content.decode("utf-8", errors="replace")


class BadRequest(Exception):
    """Raise in a route handler to answer 400 with this message."""


@attrs.frozen(kw_only=True)
class HttpResponse:
    """What a route answers."""

    body: bytes | str = b""
    status: int = 200
    headers: Mapping[str, str] = attrs.Factory(dict)
    media_type: str | None = None

    @classmethod
    def json(cls, data: Any, status: int = 200,
             headers: Mapping[str, str] | None = None) -> HttpResponse:
        """A JSON response."""
        return cls(body=orjson.dumps(data), status=status, headers=dict(headers or {}),
                   media_type="application/json")

    @classmethod
    def text(cls, text: str, status: int = 200,
             headers: Mapping[str, str] | None = None) -> HttpResponse:
        """A text/plain response."""
        return cls(body=text, status=status, headers=dict(headers or {}),
                   media_type="text/plain; charset=utf-8")


#: A route's handler.
RouteHandler = Callable[[HttpRequest], Any]


def _pattern(path: str) -> re.Pattern[str]:
    if not path.startswith("/"):
        raise ValueError(f"custom route {path!r}: a path starts with '/'")
    out = ""
    for part in re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", path):
        if part.startswith("{") and part.endswith("}"):
            out += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            out += re.escape(part)
    return re.compile(out + r"\Z")


@attrs.frozen
class Route:
    """One custom route: its path pattern, methods and handler."""

    path: str
    methods: frozenset[str]
    handler: RouteHandler
    auth: bool
    pattern: re.Pattern[str] = attrs.field(repr=False)
    is_async: bool = attrs.field(repr=False)

    @classmethod
    def of(cls, path: str, methods: Sequence[str], handler: RouteHandler, *,
           auth: bool = False) -> Route:
        """Check and build a route."""
        import inspect

        if isinstance(methods, str):
            methods = [methods]
        if not callable(handler):
            raise TypeError(f"@server.custom_route({path!r}) needs a function")
        wanted = frozenset(m.upper() for m in methods)
        if not wanted:
            raise ValueError(f"custom route {path!r}: give at least one method")
        return cls(path, wanted, handler, auth, _pattern(path),
                   inspect.iscoroutinefunction(handler))

    def match(self, path: str) -> dict[str, str] | None:
        """The path parameters if ``path`` is this route's, else None."""
        m = self.pattern.match(path)
        return None if m is None else m.groupdict()


def find(routes: Sequence[Route], path: str) -> list[tuple[Route, dict[str, str]]]:
    """The routes whose path matches ``path`` (with their parameters)."""
    out = []
    for route in routes:
        params = route.match(path)
        if params is not None:
            out.append((route, params))
    return out


def _response(value: Any) -> HttpResponse:
    if isinstance(value, HttpResponse):
        return value
    if hasattr(value, "status_code") and isinstance(getattr(value, "body", None), bytes):
        # A Starlette response (JSONResponse, PlainTextResponse...) of a ported route;
        # its headers already hold its content type and length.
        headers = {k: v for k, v in value.headers.items() if k.lower() != "content-length"}
        return HttpResponse(body=value.body, status=int(value.status_code), headers=headers)
    if value is None:
        return HttpResponse(status=204)
    if isinstance(value, str):
        return HttpResponse.text(value)
    if isinstance(value, (bytes, bytearray)):
        return HttpResponse(body=bytes(value), media_type="application/octet-stream")
    if isinstance(value, (dict, list)):
        return HttpResponse.json(value)
    raise TypeError(f"a route handler returned {type(value).__name__}: return an "
                    "HttpResponse, str, bytes, a dict or list, or None")


async def serve_route(matches: list[tuple[Route, dict[str, str]]], scope: Scope,
                      receive: Receive, send: Send, max_body: int) -> None:
    """Answer one request whose path matched custom routes."""
    method = scope.get("method", "GET")
    found = next(((r, p) for r, p in matches if method in r.methods), None)
    if found is None and method == "HEAD":
        found = next(((r, p) for r, p in matches if "GET" in r.methods), None)
    if found is None:
        allowed = sorted({m for r, _ in matches for m in r.methods})
        await asgi.send_error(send, HttpError(405, "Method Not Allowed"),
                              [(b"allow", ", ".join(allowed).encode())])
        return
    route, params = found
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    headers: dict[str, str] = {}
    for k, v in raw:
        name = k.decode("latin-1").lower()
        value = v.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    try:
        body = await asgi.read_body(receive, max_body, headers.get("content-length"))
    except asgi.BodyTooLarge:
        await asgi.send_error(send, HttpError(413, "Payload Too Large"))
        return
    client = scope.get("client")
    request = HttpRequest(
        method=method, path=scope.get("path", ""), headers=headers,
        query_string=scope.get("query_string", b""), content=body, path_params=params,
        client=tuple(client) if client else None)
    try:
        if route.is_async:
            value = await route.handler(request)
        else:
            value = await trio.to_thread.run_sync(route.handler, request)
        if isinstance(value, Awaitable):
            value = await value
        response = _response(value)
    except BadRequest as exc:
        response = HttpResponse.text(f"Bad Request: {exc}", status=400)
    except Exception:
        log.exception("custom route %s %s failed", method, route.path)
        response = HttpResponse.text("Internal Server Error", status=500)
    body_out = response.body.encode() if isinstance(response.body, str) else response.body
    out_headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1"))
                   for k, v in response.headers.items()]
    content_type = None
    if response.media_type and not any(k == b"content-type" for k, _ in out_headers):
        content_type = response.media_type.encode("latin-1")
    if method == "HEAD":
        await send({"type": "http.response.start", "status": response.status,
                    "headers": [*out_headers, *([(b"content-type", content_type)]
                                                if content_type else []),
                                (b"content-length", str(len(body_out)).encode())]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    await asgi.send_response(send, response.status, body_out, out_headers, content_type)
