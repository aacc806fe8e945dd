"""The Streamable HTTP client transport (and its fallback to legacy HTTP+SSE).

Every outbound message is one POST (``Accept: application/json, text/event-stream``).
A POST carrying requests is answered with JSON or an SSE stream; a stream that ends
before all its responses came is resumed with ``GET`` + ``Last-Event-ID`` after the
server's ``retry:`` delay. After initialize, the session id and negotiated version go
on every request, a standalone GET stream is opened (405 and other refusals are fine),
a 404 starts a new session transparently (initialize again, then retry), and closing
sends DELETE. When the very first POST is refused with a 4xx, the server is tried as a
legacy HTTP+SSE server (see :mod:`.legacy_sse_client`).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import orjson
import trio

from mcpactor.protocol import jsonrpc
from mcpactor.protocol.headers import request_headers
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.modern import META_PROTOCOL_VERSION
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from mcpactor.transports.http_client import (
    HttpClientError,
    HttpPool,
    HttpResponse,
    PendingResponse,
)
from mcpactor.transports.http_session import response_ids
from mcpactor.transports.sse import SseParser

log = logging.getLogger("mcpactor.http.client")

__all__ = ["StreamableHttpClientTransport"]

DEFAULT_RETRY_MS = 1000
MAX_RESUME_ATTEMPTS = 3
#: How long the standalone GET may take to answer with headers before we give up on it.
STANDALONE_HEADERS_TIMEOUT = 5.0
#: How long a stream may stay open once every response it owed has arrived.
STREAM_END_GRACE = 0.5


def _request_info(data: bytes) -> tuple[list[RequestId], str | None, list[RequestId]]:
    """Request ids in an outbound message, the method of its first request, and the
    ids of requests it cancels."""
    try:
        obj = jsonrpc.loads(data)  # ids exact, however wide
    except ValueError:
        return [], None, []
    items = obj if isinstance(obj, list) else [obj]
    ids: list[RequestId] = []
    cancels: list[RequestId] = []
    method = None
    for item in items:
        if not isinstance(item, dict) or "method" not in item:
            continue
        if "id" in item:
            ids.append(item["id"])
            method = method or item["method"]
        elif item["method"] == "notifications/cancelled":
            rid = (item.get("params") or {}).get("requestId")
            if isinstance(rid, (str, int)):
                cancels.append(rid)
    return ids, method, cancels


def _modern_headers(
    data: bytes, tool_schemas: dict[str, Any]
) -> list[tuple[str, str]] | None:
    """The headers of a stateless (2026-07-28) request, None for any other message
    (``tool_schemas``: each listed tool's ``inputSchema``, for ``Mcp-Param-*``)."""
    if data.find(b"io.modelcontextprotocol/protocolVersion") < 0:
        return None
    try:
        obj = jsonrpc.loads(data)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "method" not in obj:
        return None
    params = obj.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if not isinstance(version, str):
        return None
    name = params.get("name") if isinstance(params, dict) else None
    schema = tool_schemas.get(name) if obj["method"] == "tools/call" and isinstance(
        name, str) else None
    headers = request_headers(obj["method"], params, schema)
    return [("mcp-protocol-version", version), *((k.lower(), v) for k, v in headers.items())]


class StreamableHttpClientTransport(Transport):
    """Client side of Streamable HTTP. Needs a nursery for its response readers."""

    name = "http"

    def __init__(
        self,
        url: str,
        nursery: trio.Nursery,
        *,
        headers: dict[str, str] | None = None,
        pool: HttpPool | None = None,
        legacy_fallback: bool = True,
        open_get_stream: bool = True,
    ) -> None:
        self.url = url
        self.nursery = nursery
        self.extra_headers = dict(headers or {})
        self.pool = pool or HttpPool()
        self.legacy_fallback = legacy_fallback
        self.open_get_stream = open_get_stream
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        #: Each listed tool's ``inputSchema`` by name, kept by the client from
        #: ``tools/list`` in the stateless era: a ``tools/call`` mirrors the arguments
        #: the schema marks with ``x-mcp-header`` into ``Mcp-Param-*`` (SEP-2243).
        self.tool_schemas: dict[str, Any] = {}
        #: Each stateless request in flight → the scope of its POST (cancelling the
        #: request cancels it, closing the connection).
        self._modern: dict[RequestId, trio.CancelScope] = {}
        self._in_send, self._in_recv = trio.open_memory_channel[bytes](math.inf)
        self._answered: dict[RequestId, trio.Event] = {}
        #: Requests we cancelled: their streams are cut at once (no answer comes, and
        #: in 2026-07-28 closing the stream is what cancels a request).
        self._cancelled: set[RequestId] = set()
        self._init_request: dict[str, Any] | None = None
        self._init_id: RequestId | None = None
        self._get_started = False
        self._closed = False
        self._reinit_lock = trio.Lock()
        self._legacy: Any = None  # LegacySseClientTransport once we fell back
        self._first_post = True

    @property
    def uses_legacy(self) -> bool:
        """Whether the server turned out to be a legacy HTTP+SSE one (we fell back)."""
        return self._legacy is not None

    # -- Transport --------------------------------------------------------------------

    async def receive(self) -> bytes | Oversize:
        """The next message from the server (from any response or stream)."""
        try:
            return await self._in_recv.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise trio.EndOfChannel from None

    async def send(self, messages: list[Outgoing]) -> None:
        """POST each message, in order."""
        for data, _ in messages:
            if self._closed:
                raise TransportClosed("the HTTP transport is closed")
            if self._legacy is not None:
                await self._legacy.post(data)
            else:
                await self._post(data)

    async def aclose(self) -> None:
        """DELETE the session (best effort), then drop every connection."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            if self._legacy is not None:
                await self._legacy.aclose()
            elif self.session_id is not None:
                with trio.move_on_after(2):
                    try:
                        r = await self.pool.request("DELETE", self.url, self._headers())
                        await r.read()
                        await r.aclose()
                    except HttpClientError:
                        pass
            await self.pool.aclose()
        self._in_send.close()

    # -- helpers ----------------------------------------------------------------------

    def _headers(self, *, accept: str = "application/json, text/event-stream") -> list[tuple[str, str]]:
        h = [("accept", accept), *self.extra_headers.items()]
        if self.session_id is not None:
            h.append(("mcp-session-id", self.session_id))
        if self.protocol_version is not None:
            h.append(("mcp-protocol-version", self.protocol_version))
        return h

    def _deliver(self, data: bytes) -> None:
        ids = response_ids(data)
        if self._init_id is not None and self._init_id in ids:
            self._learn_version(data)
        for rid in ids:
            self._modern.pop(rid, None)
            ev = self._answered.pop(rid, None)
            if ev is not None:
                ev.set()
        try:
            self._in_send.send_nowait(data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    def _learn_version(self, data: bytes) -> None:
        try:
            obj = orjson.loads(data)
            version = obj["result"]["protocolVersion"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return
        if isinstance(version, str):
            self.protocol_version = version

    def _fail(self, ids: list[RequestId], message: str) -> None:
        """Answer requests locally with an error when their stream is lost for good."""
        for rid in ids:
            if rid in self._answered:
                self._deliver(jsonrpc.dumps({
                    "jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": message}
                }))

    # -- POST -------------------------------------------------------------------------

    async def _post(self, data: bytes) -> None:
        ids, method, cancels = _request_info(data)
        stateless = 0
        for rid in cancels:
            # A cancelled request gets no response: stop waiting (and resuming) for it.
            ev = self._answered.pop(rid, None)
            if ev is not None:
                self._cancelled.add(rid)
                ev.set()
            scope = self._modern.pop(rid, None)
            if scope is not None:
                # 2026-07-28: closing the request's stream (its connection) is the
                # cancellation; there is no session to POST notifications/cancelled to.
                scope.cancel()
                stateless += 1
        if cancels and not ids and stateless == len(cancels):
            return
        if method == "initialize":
            self._init_request = orjson.loads(data)
            self._init_id = ids[0]
        for rid in ids:
            self._answered[rid] = trio.Event()
        headers = _modern_headers(data, self.tool_schemas) if ids else None
        if headers is None:
            headers = [*self._headers(), ("content-type", "application/json")]
        else:
            scope = trio.CancelScope()
            for rid in ids:
                self._modern[rid] = scope
            # 2026-07-28: no session; the version and the SEP-2243 mirrors per POST.
            headers = [("accept", "application/json, text/event-stream"),
                       *self.extra_headers.items(), ("content-type", "application/json"),
                       *headers]
        try:
            pending = await self.pool.send("POST", self.url, headers, data)
        except HttpClientError as exc:
            self._fail(ids, f"HTTP request failed: {exc}")
            return
        if ids and method != "initialize":
            # The request is on the wire, in order; its answer is awaited in the
            # background, since a JSON answer only comes once the request is done and
            # the writer must stay free to answer what the server asks meanwhile.
            self.nursery.start_soon(self._finish_post, pending, data, ids, method)
        else:
            # initialize: the session id must be known before the next POST;
            # notifications and responses: a quick 202.
            await self._finish_post(pending, data, ids, method)

    async def _finish_post(
        self, pending: PendingResponse, data: bytes, ids: list[RequestId], method: str | None
    ) -> None:
        scope = self._modern.get(ids[0]) if ids else None
        with scope if scope is not None else trio.CancelScope():
            try:
                await self._finish_post_unguarded(pending, data, ids, method)
            except (HttpClientError, ValueError) as exc:
                # A broken connection or a garbled answer fails these requests, not the
                # session.
                self._fail(ids, f"HTTP request failed: {exc}")
        for rid in ids:
            self._modern.pop(rid, None)

    async def _finish_post_unguarded(
        self, pending: PendingResponse, data: bytes, ids: list[RequestId], method: str | None
    ) -> None:
        resp = await pending.response()
        first = self._first_post
        if method != "server/discover":  # the era probe leaves the fallbacks intact
            self._first_post = False
        if resp.status == 404 and self.session_id is not None:
            await resp.read()
            await resp.aclose()
            failure = await self._reinitialize()
            if failure is None:
                await self._post_again(data, ids)
            else:
                self._fail(ids, "the session expired and a new one could not be started "
                                f"({failure}); the next request tries again")
            return
        if first and method == "initialize" and 400 <= resp.status < 500 and self.legacy_fallback:
            await resp.read()
            await resp.aclose()
            if await self._fall_back(data):
                return
            self._fail(ids, f"HTTP {resp.status} from the server")
            return
        sid = resp.headers.get("mcp-session-id")
        if sid and method == "initialize":
            self.session_id = sid
        if not ids:
            # Notifications and responses: 202 expected; a body (some servers send one)
            # is read and dropped, never fed back to the session.
            await resp.read()
            await resp.aclose()
            if resp.status >= 400:
                log.debug("POST of a notification/response got HTTP %s", resp.status)
            elif self._init_id is not None and not self._get_started and self.open_get_stream:
                if data.find(b"notifications/initialized") >= 0:
                    self._get_started = True
                    await self._open_standalone()
            return
        await self._read_response(resp, ids)

    async def _post_again(self, data: bytes, ids: list[RequestId]) -> None:
        try:
            resp = await self.pool.request(
                "POST", self.url, [*self._headers(), ("content-type", "application/json")], data
            )
        except HttpClientError as exc:
            self._fail(ids, f"HTTP request failed: {exc}")
            return
        if not ids:
            await resp.read()
            await resp.aclose()
            return
        self.nursery.start_soon(self._read_response, resp, ids)

    async def _read_response(self, resp: HttpResponse, ids: list[RequestId]) -> None:
        try:
            await self._read_response_body(resp, ids)
        finally:
            self._cancelled.difference_update(ids)

    async def _read_response_body(self, resp: HttpResponse, ids: list[RequestId]) -> None:
        try:
            if resp.status >= 400 or resp.status == 202:
                body = await resp.read()
                await resp.aclose()
                # An error body may be a JSON-RPC error for our request: pass it on.
                if body.startswith(b"{") and body.find(b'"id"') >= 0 and response_ids(body):
                    self._deliver(body)
                self._fail(ids, f"HTTP {resp.status} from the server{_error_text(body)}")
                return
            if resp.content_type == "text/event-stream":
                await self._read_sse(resp, ids)
                return
            try:
                body = await resp.read()
            finally:
                await resp.aclose()
            if body.strip():
                self._deliver(body)
            self._fail(ids, "the server's response did not answer the request")
        except (HttpClientError, ValueError) as exc:  # ValueError: an oversized SSE line
            await resp.aclose()
            self._fail(ids, f"HTTP response broke: {exc}")

    async def _read_sse(self, resp: HttpResponse, ids: list[RequestId]) -> None:
        parser = SseParser()
        waits = [self._answered[r] for r in ids if r in self._answered]
        with trio.CancelScope() as scope:
            self.nursery.start_soon(self._cancel_when_answered, waits, scope, ids)
            try:
                await self._consume(resp, parser)
            except (HttpClientError, ValueError):
                pass
            finally:
                await resp.aclose()
            # The stream ended before every response came: resume it (SSE polling).
            attempts = 0
            while any(r in self._answered for r in ids) and parser.last_event_id is not None:
                attempts += 1
                if attempts > MAX_RESUME_ATTEMPTS:
                    break
                await trio.sleep((parser.retry if parser.retry is not None else DEFAULT_RETRY_MS) / 1000)
                if await self._resume(parser):
                    attempts = 0
        scope.cancel()
        self._fail(ids, "the SSE stream ended before the response")

    async def _cancel_when_answered(self, waits: list[trio.Event], scope: trio.CancelScope,
                                    ids: list[RequestId]) -> None:
        for ev in waits:
            await ev.wait()
        cancelled = all(rid in self._cancelled for rid in ids)
        self._cancelled.difference_update(ids)
        if not cancelled:
            # The server normally ends the stream right after the last response; reading
            # to that end keeps the connection reusable. A stream left open is cut after
            # a grace.
            await trio.sleep(STREAM_END_GRACE)
        scope.cancel()

    async def _consume(self, resp: HttpResponse, parser: SseParser) -> None:
        async for chunk in resp.iter_bytes():
            for ev in parser.feed(chunk):
                if ev.event == "message" and ev.data.strip():
                    self._deliver(ev.data.encode("utf-8"))

    async def _resume(self, parser: SseParser) -> bool:
        """GET with Last-Event-ID; True when the server took it (progress was made)."""
        assert parser.last_event_id is not None
        headers = [*self._headers(accept="text/event-stream"), ("last-event-id", parser.last_event_id)]
        try:
            resp = await self.pool.request("GET", self.url, headers)
            if resp.status != 200 or resp.content_type != "text/event-stream":
                await resp.read()
                await resp.aclose()
                return False
        except HttpClientError:
            return False
        try:
            await self._consume(resp, parser)
        except (HttpClientError, ValueError):
            pass
        finally:
            await resp.aclose()
        return True

    # -- standalone GET stream ---------------------------------------------------------

    async def _open_standalone(self) -> None:
        """Issue the standalone GET now, before the next POST, and read it in the
        background: a server then sees it ahead of any request we send after."""
        resp: HttpResponse | None = None
        with trio.move_on_after(STANDALONE_HEADERS_TIMEOUT):
            try:
                resp = await self.pool.request("GET", self.url, self._headers(accept="text/event-stream"))
            except HttpClientError:
                return
        if resp is not None:
            self.nursery.start_soon(self._standalone_get, resp)

    async def _standalone_get(self, first: HttpResponse | None = None) -> None:
        try:
            await self._standalone_get_unguarded(first)
        except (HttpClientError, ValueError) as exc:
            log.debug("standalone GET stream lost: %s", exc)

    async def _standalone_get_unguarded(self, first: HttpResponse | None) -> None:
        parser = SseParser()
        attempts = 0
        while not self._closed and attempts <= MAX_RESUME_ATTEMPTS:
            headers = self._headers(accept="text/event-stream")
            if parser.last_event_id is not None:
                headers.append(("last-event-id", parser.last_event_id))
            if first is not None:
                resp, first = first, None
            else:
                try:
                    resp = await self.pool.request("GET", self.url, headers)
                except HttpClientError:
                    return
            if resp.status != 200 or resp.content_type != "text/event-stream":
                # 405: the server offers no standalone stream. Anything else: same effect.
                await resp.read()
                await resp.aclose()
                return
            try:
                await self._consume(resp, parser)
                attempts = 0
            except (HttpClientError, ValueError):
                attempts += 1
            finally:
                await resp.aclose()
            if parser.last_event_id is None:
                return  # not resumable: do not reconnect in a loop
            await trio.sleep((parser.retry if parser.retry is not None else DEFAULT_RETRY_MS) / 1000)

    # -- expiry and fallback -------------------------------------------------------------

    async def _reinitialize(self) -> str | None:
        """The server forgot our session (404): start a new one with the same initialize
        params, invisibly to the session above. None when it did; else why not (the
        old session id is kept, so the next request's 404 tries again: a server that
        could not start a session now, say its shared store restarting, may later)."""
        if self._init_request is None:
            return "the session was not started by this client"
        async with self._reinit_lock:
            stale = self.session_id
            if stale is None:
                return None  # another task already re-initialized
            self.session_id = None
            version, self.protocol_version = self.protocol_version, None
            init = dict(self._init_request, id="mcpactor-reinitialize")
            try:
                resp = await self.pool.request(
                    "POST", self.url,
                    [*self._headers(), ("content-type", "application/json")], orjson.dumps(init),
                )
                body = await resp.read()  # the answer is ours, not the session's
                await resp.aclose()
                if resp.status != 200:
                    self.session_id, self.protocol_version = stale, version
                    return f"HTTP {resp.status}{_error_text(body)}"
                self.session_id = resp.headers.get("mcp-session-id")
                self.protocol_version = version
                resp = await self.pool.request(
                    "POST", self.url, [*self._headers(), ("content-type", "application/json")],
                    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                )
                await resp.read()
                await resp.aclose()
            except HttpClientError as exc:
                if self.session_id is None:
                    self.session_id, self.protocol_version = stale, version
                return str(exc)
            if self.open_get_stream:
                await self._open_standalone()
            return None

    async def _fall_back(self, init: bytes) -> bool:
        from mcpactor.transports.legacy_sse_client import LegacySseClientTransport

        legacy = LegacySseClientTransport(
            self.url, self.nursery, headers=self.extra_headers, pool=self.pool,
            deliver=self._deliver,
        )
        try:
            await legacy.connect()
        except (HttpClientError, TransportClosed) as exc:
            log.debug("legacy HTTP+SSE fallback failed: %s", exc)
            return False
        self._legacy = legacy
        await legacy.post(init)
        return True


def _error_text(body: bytes) -> str:
    """``": <message>"`` of a JSON-RPC error in an HTTP error's body (a 503 saying why,
    with no request id), else nothing."""
    try:
        parsed = orjson.loads(body)
    except (orjson.JSONDecodeError, TypeError):
        return ""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f": {message}" if isinstance(message, str) and message else ""
