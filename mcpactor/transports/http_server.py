"""The Streamable HTTP server: one ASGI app, served by our lean h11 server or hypercorn.

One endpoint (``/mcp`` by default) takes POST (messages in; a JSON body or an SSE
stream out), GET (the standalone SSE stream, or a resumption with ``Last-Event-ID``)
and DELETE (end the session). Each HTTP session is one :class:`Session` actor tree run
in the app's nursery (a 2026-07-28 request's session runs none: it serves its one
request in the POST's task, :mod:`.http_modern`); :mod:`.http_session` routes its
output to the right stream.
The legacy HTTP+SSE transport (2024-11-05) is served next to it (:mod:`.legacy_sse`).

Order of checks for every request, cheapest and most security-relevant first:
Host/Origin (DNS rebinding), method, Accept, Content-Type, body size, JSON, protocol
version header, session id. Every refusal is a status code with a JSON-RPC error body;
nothing a client sends produces a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.observability import switch as observe
from mcpactor.protocol import jsonrpc, versions
from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Scope, Send
from mcpactor.transports.base import TransportClosed
from mcpactor.transports.endpoint import EndpointSource, SessionEndpoint, endpoint_of
from mcpactor.transports.http_modern import is_modern_post, modern_post
from mcpactor.transports.http_options import HttpOptions
from mcpactor.transports.http_rules import (
    Headers,
    HttpError,
    check_accept_get,
    check_accept_post,
    check_content_type,
    check_protocol_version,
    invalid_request,
    is_error_response,
    is_initialize,
    new_session_id,
)
from mcpactor.transports.http_session import HttpSession
from mcpactor.transports.http_stateless import stateless_post
from mcpactor.transports.peers import peer_of_scope
from mcpactor.transports.request_gate import RequestGate
from mcpactor.transports.security import OriginPolicy
from mcpactor.transports.session_table import SessionTable
from mcpactor.transports.sse_pump import PumpOptions, pump_stream

if TYPE_CHECKING:
    from mcpactor.scaleout.cluster import Cluster
    from mcpactor.session.limits import Limits
    from mcpactor.transports.event_store import Stream

log = logging.getLogger("mcpactor.http")

#: Sessions the idle reaper closes in one scheduler step.
_CLOSE_BATCH = 64

__all__ = ["HTTP_SERVERS", "HttpOptions", "McpHttpApp", "serve_app", "serve_http"]


class McpHttpApp:
    """The ASGI application. Call :meth:`run` in a nursery before serving requests.

    ``endpoint``: what it serves (:class:`SessionEndpoint`, or an object providing one
    such as a ``Server``): sessions are opened through it, never through a server.
    """

    def __init__(
        self, endpoint: SessionEndpoint | EndpointSource, options: HttpOptions | None = None,
        *, cluster: Cluster | None = None,
    ) -> None:
        self.endpoint = endpoint_of(endpoint)
        self.options = options or HttpOptions()
        #: Scale-out: the workers sharing state with this one (mcpactor.scaleout), or None.
        #: Its hooks below are marked [scale-out].
        self.cluster = cluster
        self.policy = OriginPolicy(self.options.allowed_hosts, self.options.allowed_origins)
        #: Sessions by id (and by the address that opened each): session_table.py.
        self.sessions = SessionTable(self.options.max_sessions,
                                     self.options.max_sessions_per_peer)
        self._nursery: trio.Nursery | None = None
        #: A tool's ``inputSchema`` by name, for the 2026-07-28 ``Mcp-Param-*`` checks.
        self.tool_schema = self.endpoint.tool_input_schema
        self._metrics: Any = None
        #: The sessionless (2026-07-28) requests' slots and queue (request_gate.py),
        #: made with the first of them from the server's limits.
        self._request_gate: RequestGate | None = None
        if self.options.metrics_path is not None:
            # Before any session exists: sessions read the switch when they are made.
            from mcpactor.observability import enable_prometheus

            self._metrics = enable_prometheus()

    @property
    def response_mode(self) -> str:
        """The :class:`HttpSession` mode that ``options.json_response`` asks for."""
        jr = self.options.json_response
        return "auto" if jr is None else "json" if jr else "sse"

    def request_gate(self, limits: Limits) -> RequestGate:
        """The slots and queue every sessionless request of this app shares, sized by
        ``limits`` (the server's: every session it opens has the same)."""
        gate = self._request_gate
        if gate is None:
            gate = self._request_gate = RequestGate(limits.max_concurrent_requests,
                                                    limits.max_queued_requests)
        return gate

    # -- lifetime ---------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the sessions' tasks and the idle reaper until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._reaper)
                if self.cluster is not None:
                    await nursery.start(self.cluster.run, self)  # [scale-out]
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None

    async def _reaper(self) -> None:
        timeout = self.options.session_idle_timeout
        if timeout is None:
            return
        period = min(max(timeout / 4, 0.05), 5.0)
        while True:
            await trio.sleep(period)
            now = trio.current_time()
            expired = [hs for hs in self.sessions.values()
                       if hs.idle_for(now) > timeout and hs.session is not None]
            for n, hs in enumerate(expired):
                if n and not n % _CLOSE_BATCH:
                    # Sessions opened together expire together: closing thousands in
                    # one step would hold every other client up for that long.
                    await trio.lowlevel.checkpoint()
                    now = trio.current_time()
                if self.sessions.get(hs.id) is not hs or hs.idle_for(now) <= timeout:
                    continue  # gone, or used again, while others were closed
                log.info("session %s: idle for %.0fs, closing", hs.id, timeout)
                self._close_session(hs, "idle timeout")

    def _forget(self, hs: HttpSession) -> None:
        if self.sessions.get(hs.id) is hs:
            del self.sessions[hs.id]

    async def make_room(self, peer: str, send: Send) -> bool:
        """Before a new session opened from ``peer``: close the idle sessions that make
        room for it (session_table.py); False, having answered 503, if none can."""
        closing, refusal = self.sessions.room_for(peer)
        if refusal is not None:
            await asgi.send_error(send, HttpError(503, f"Service Unavailable: {refusal}"),
                                  [(b"retry-after", b"5")])
            return False
        if closing:
            log.info("closing %d idle sessions (least recently used) to make room for "
                     "a new one from %s", len(closing), peer or "an unknown address")
        for hs in closing:
            self._close_session(hs, "closed to make room for a new session")
        return True

    def _close_session(self, hs: HttpSession, why: str) -> None:
        self._forget(hs)
        if self.cluster is not None:
            self.cluster.retire(hs.id)  # [scale-out] gone for every worker
        if hs.session is not None:
            hs.session.close(why)

    async def start_session(
        self, mode: str, *, drop_ids: frozenset[Any] = frozenset(), resumable: bool = True,
        session_id: str | None = None,
    ) -> HttpSession:
        """Create and start one session (its actor tree runs in the app's nursery);
        ``session_id``: an existing session's, taken over from another worker."""
        hs = self.new_session(mode, drop_ids=drop_ids, resumable=resumable,
                              session_id=session_id)
        await self.start(hs)
        return hs

    async def start(self, hs: HttpSession) -> None:
        """Start the actor tree of a session made by :meth:`new_session`, in the app's
        nursery (it ends when the session closes)."""
        if self._nursery is None:
            raise RuntimeError("McpHttpApp.run() is not running")
        await self._nursery.start(self._run_session, hs)

    def new_session(
        self, mode: str, *, drop_ids: frozenset[Any] = frozenset(), resumable: bool = True,
        session_id: str | None = None,
    ) -> HttpSession:
        """Create one session, not started: :meth:`start_session` runs its actor tree,
        a 2026-07-28 request serves itself in it without one (``Session.scoped``)."""
        if self._nursery is None:
            raise RuntimeError("McpHttpApp.run() is not running")
        sid = session_id or new_session_id()
        tracer = self.options.tracer
        hs = HttpSession(
            sid, mode=mode, max_events=self.options.max_events,
            max_in_flight=self.options.max_in_flight, drop_ids=drop_ids, resumable=resumable,
            queued=tracer is not None,
        )
        hs.session = self.endpoint.open_session(hs.transport, tracer=tracer, session_id=sid)
        if self.options.auth is not None:
            self.options.auth.bind(hs.session)  # [auth] the principal owns the session
        return hs

    async def _run_session(self, hs: HttpSession, *, task_status: trio.TaskStatus[None]) -> None:
        assert hs.session is not None
        try:
            await hs.session.run(task_status=task_status)
        except Exception:
            # An actor bug ends this session only; the others keep being served.
            log.exception("session %s ended by an internal error", hs.id)
        finally:
            self._forget(hs)
            hs.finish()
            if self.cluster is not None and hs.resumable:
                await self.cluster.ended(hs)  # [scale-out]

    # -- ASGI entry -------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await asgi.lifespan(receive, send)
            return
        if kind != "http":
            return
        # Observed: the request's W3C trace context headers, for the messages it carries.
        carrier = (observe.enter_http(scope.get("headers", []))
                   if observe.ACTIVE is not None else None)
        try:
            await self._http(scope, receive, send)
        except asgi.GONE:
            pass
        except TransportClosed:
            # The session ended between the lookup and the delivery of the message.
            try:
                await asgi.send_error(send, HttpError(404, "Not Found: the session ended"))
            except Exception:
                pass
        except Exception as exc:
            if asgi.client_gone(exc):
                return  # wrapped in a group by a nursery: still only a client that left
            log.exception("internal error serving %s %s", scope.get("method"), scope.get("path"))
            try:
                await asgi.send_error(send, HttpError(500, "Internal Server Error", -32603))
            except Exception:
                pass  # the response had already started
        finally:
            if carrier is not None:
                observe.HTTP_CARRIER.reset(carrier)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope.get("headers", []))
        if not self.policy.host_ok(headers.get("host")):
            await asgi.send_error(send, HttpError(421, "Misdirected Request: Host not allowed"))
            return
        if not self.policy.origin_ok(headers.get("origin")):
            await asgi.send_error(send, HttpError(403, "Forbidden: Origin not allowed"))
            return
        path = scope.get("path", "")
        method = scope.get("method", "GET")
        opts = self.options
        # [auth] OAuth resource server: metadata documents, then the bearer token.
        if opts.auth is not None and await opts.auth.guard(
            scope, headers, self._protected(path), send
        ):
            return
        if path == opts.metrics_path and self._metrics is not None:
            from mcpactor.observability.prometheus import serve_metrics

            await serve_metrics(self._metrics, method, send)
            return
        if path == opts.path or path == opts.path.rstrip("/") + "/":
            if self.cluster is not None and not opts.stateless:
                # [scale-out] a session of another worker: relayed to it, or taken over.
                sid = headers.get("mcp-session-id")
                if sid is not None and sid.strip() not in self.sessions:
                    if await self.cluster.route(sid.strip(), scope, receive, send):
                        return
            if method == "POST":
                await self._post(headers, receive, send, scope)
            elif method == "GET":
                await self._get(headers, receive, send)
            elif method == "DELETE":
                await self._delete(headers, send)
            else:
                await self._not_allowed(send)
            return
        if opts.legacy_sse and not opts.stateless:
            from mcpactor.transports import legacy_sse

            if path == opts.sse_path and method == "GET":
                await legacy_sse.handle_sse(self, headers, receive, send, scope)
                return
            if path == opts.messages_path or path == opts.messages_path.rstrip("/"):
                await legacy_sse.handle_message(self, scope, headers, receive, send)
                return
        # The server's own routes (@server.custom_route), after the MCP endpoints.
        if await self.endpoint.serve_route(scope, receive, send, opts.max_body_size):
            return
        await asgi.send_error(send, HttpError(404, "Not Found"))

    def _allowed_methods(self) -> bytes:
        allowed = ["POST"]
        if not self.options.stateless:
            if self.options.enable_get:
                allowed.append("GET")
            if self.options.enable_delete:
                allowed.append("DELETE")
        return ", ".join(allowed).encode()

    async def _not_allowed(self, send: Send) -> None:
        await asgi.send_error(
            send, HttpError(405, "Method Not Allowed"), [(b"allow", self._allowed_methods())]
        )

    def _lookup(self, headers: Headers) -> HttpSession | HttpError:
        sid = headers.get("mcp-session-id")
        if sid is None:
            return HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        hs = self.sessions.get(sid.strip())
        if hs is None or hs.ended:
            return HttpError(404, "Not Found: unknown or expired session")
        # [auth] a session answers only the principal that opened it.
        if self.options.auth is not None and hs.session is not None:
            if not self.options.auth.admits(hs.session):
                return HttpError(403, "Forbidden: the session belongs to another principal")
        return hs

    def _protected(self, path: str) -> bool:
        """[auth] Whether ``path`` is one of the MCP endpoints (tokens required)."""
        opts = self.options
        mcp = opts.path.rstrip("/")
        legacy = (opts.sse_path, opts.messages_path, opts.messages_path.rstrip("/"))
        return (path in (mcp, mcp + "/") or (opts.legacy_sse and path in legacy)
                or self.endpoint.route_needs_auth(path))

    # -- POST ---------------------------------------------------------------------------

    async def _post(self, headers: Headers, receive: Receive, send: Send,
                    scope: Scope | None = None) -> None:
        err = check_accept_post(headers.get("accept")) or check_content_type(
            headers.get("content-type")
        )
        if err is not None:
            await asgi.send_error(send, err)
            return
        read = await asgi.read_jsonrpc(
            receive, send, self.options.max_body_size, headers.get("content-length")
        )
        if read is None:
            return
        body, parsed = read
        items = parsed.items if isinstance(parsed, jsonrpc.Batch) else [parsed]
        if any(isinstance(m, jsonrpc.Invalid) for m in items):
            await asgi.send_error(send, invalid_request("Invalid Request: malformed batch item"))
            return
        is_batch = isinstance(parsed, jsonrpc.Batch)
        header = headers.get("mcp-protocol-version")
        if not is_batch and is_modern_post(header.strip() if header else None, items[0]):
            await modern_post(self, headers, body, items[0], receive, send)
            return
        # [auth] per-tool scopes: 403 insufficient_scope before the session sees the call.
        if self.options.auth is not None and await self.options.auth.check_items(
            self.endpoint.tool_scopes, items, send
        ):
            return
        if any(is_initialize(m) for m in items):
            if is_batch:
                await asgi.send_error(
                    send, invalid_request("Invalid Request: initialize must not be batched")
                )
                return
            if headers.get("mcp-session-id") is None or self.options.stateless:
                await self._initialize(body, items[0], send,
                                       peer_of_scope(scope) if scope is not None else "")
                return
        else:
            err = check_protocol_version(headers.get("mcp-protocol-version"))
            if err is not None:
                await asgi.send_error(send, err)
                return
        if self.options.stateless:
            await stateless_post(self, headers, body, items, is_batch, receive, send)
            return
        found = self._lookup(headers)
        if isinstance(found, HttpError):
            await asgi.send_error(send, found)
            return
        if self.options.auth is not None and found.session is not None:
            self.options.auth.note_requests(found.session, items)  # [auth] per-request token
        await self._session_post(found, body, items, is_batch, receive, send)

    async def _initialize(self, body: bytes, msg: Any, send: Send, peer: str = "") -> None:
        if not self.options.stateless and not await self.make_room(peer, send):
            return
        hs = await self.start_session(self.response_mode)
        hs.peer = peer
        assert hs.session is not None
        stream = hs.open_request_stream([msg.id])
        await hs.transport.deliver(body)
        while not stream.done:
            await stream.wait_changed()
        answer = b"".join(data for _, data in stream.after(0))
        hs.store.discard(stream)
        if not answer or is_error_response(answer) or self.options.stateless:
            # A failed initialize leaves no session behind (nor does a stateless one).
            hs.session.close("initialize failed" if not self.options.stateless else "stateless")
            await asgi.send_json(send, answer or asgi.error_body(-32603, "no answer"))
            return
        if self.cluster is not None and not await self.cluster.registered(hs, body, send):
            return  # [scale-out] the shared store refused it: answered 503
        self.sessions[hs.id] = hs
        hs.touch()
        await asgi.send_json(send, answer, [(b"mcp-session-id", hs.id.encode())])

    async def _session_post(
        self, hs: HttpSession, body: bytes, items: list[Any], is_batch: bool,
        receive: Receive, send: Send,
    ) -> None:
        assert hs.session is not None
        version = hs.session.connection.protocol_version
        if is_batch and not versions.allows_batches(version):
            await asgi.send_error(
                send,
                invalid_request(f"Invalid Request: protocol version {version} does not allow batches"),
            )
            return
        ids = [m.id for m in items if isinstance(m, jsonrpc.Request)]
        hs.touch()
        if self.cluster is not None:
            await self.cluster.note(hs, items)  # [scale-out] what a takeover replays
        if not ids:
            await hs.transport.deliver(body)
            hs.forget_cancelled(items)
            await asgi.send_response(send, 202)
            return
        if any(rid in hs.request_streams for rid in ids) or len(set(ids)) != len(ids):
            await asgi.send_error(send, invalid_request("Invalid Request: duplicate request id"))
            return
        if hs.in_flight() + len(ids) > hs.max_in_flight:
            await asgi.send_error(
                send, HttpError(429, "Too Many Requests: in-flight request limit reached")
            )
            return
        stream = hs.open_request_stream(ids)
        if self.cluster is not None and not await self.cluster.opened(hs, stream, ids, send):
            return  # [scale-out] the shared store refused it: answered 503
        if not is_batch and len(items) == 1 and hs.mode != "single" and self._nursery is not None:
            await self.post_inline(hs, stream, body, items[0], receive, send, version)
            return
        await hs.transport.deliver(body)
        hs.forget_cancelled(items)
        await self.answer(hs, stream, receive, send, version)

    async def post_inline(
        self, hs: HttpSession, stream: Stream, body: bytes, msg: jsonrpc.Message,
        receive: Receive, send: Send, version: str | None, *, resumable: bool = True,
        status_of: Callable[[bytes], int] | None = None,
        on_answered: Callable[[], None] | None = None,
    ) -> None:
        """Deliver a lone request (``msg``, parsed from ``body``) whose handler runs in
        this task, then answer it.

        A handler that finishes without waiting (most tool calls) is answered with no
        task and no scheduler pass between the request and its answer. One that waits
        is answered by a task of its own, started when it first waits, exactly as
        :meth:`answer` would here (JSON, or SSE as it streams or after the window),
        while this task keeps running the handler; ``on_answered()`` is called when
        that task is done (a 2026-07-28 request ends with its POST: the client that
        left cancelled it). ``resumable``, ``status_of``: see :meth:`answer`.
        """
        nursery = self._nursery
        assert nursery is not None
        answered: trio.Event | None = None
        answering: trio.CancelScope | None = None  # made when needed: most never are
        # Taken before the handler runs: it may detach the stream (SSE polling) before
        # the answer starts.
        generation = stream.generation

        def on_block() -> None:
            nonlocal answered, answering
            answered = trio.Event()
            answering = trio.CancelScope()
            nursery.start_soon(self._answer_task, hs, stream, receive, send, version,
                               generation, answering, answered, resumable, status_of,
                               on_answered)

        try:
            await hs.transport.deliver(body, on_block, msg)
        except BaseException:
            if answered is not None and answering is not None:
                # Never return while another task still writes this response: the
                # server would start the next exchange under it.
                answering.cancel()
                with trio.CancelScope(shield=True):
                    await answered.wait()
            raise
        if answered is None:
            await self.answer(hs, stream, receive, send, version, resumable=resumable,
                              generation=generation, status_of=status_of)
        else:
            await answered.wait()

    async def _answer_task(
        self, hs: HttpSession, stream: Stream, receive: Receive, send: Send,
        version: str | None, generation: int, scope: trio.CancelScope, answered: trio.Event,
        resumable: bool, status_of: Callable[[bytes], int] | None,
        on_answered: Callable[[], None] | None,
    ) -> None:
        """:meth:`answer` in a task of its own (see :meth:`post_inline`)."""
        try:
            with scope:
                await self.answer(hs, stream, receive, send, version, resumable=resumable,
                                  generation=generation, status_of=status_of)
        except Exception as exc:
            if not asgi.client_gone(exc):
                log.exception("internal error answering a request of session %s", hs.id)
        finally:
            answered.set()
            if on_answered is not None:
                on_answered()

    async def answer(
        self, hs: HttpSession, stream: Stream, receive: Receive, send: Send,
        version: str | None, *, resumable: bool = True, generation: int | None = None,
        status_of: Callable[[bytes], int] | None = None,
    ) -> None:
        """Answer a POST's requests: one JSON body, or the stream as SSE (see
        :attr:`HttpOptions.json_response` for how the mode picks). ``generation``: the
        stream's when its requests were delivered (default: now)."""
        stateless = self.options.stateless or status_of is not None
        sid_header = [] if stateless else [(b"mcp-session-id", hs.id.encode())]
        if generation is None:
            generation = stream.generation
        if hs.mode != "sse":
            auto = hs.mode == "auto"
            if not self._decided(stream, auto, generation):
                hs.active_requests += 1
                try:
                    if not await self._wait_decided(stream, auto, generation, receive):
                        return  # the client left; the request itself goes on (not a cancel)
                finally:
                    hs.active_requests -= 1
                    hs.touch()
            if not auto or (stream.done and not stream.mixed):
                await self._answer_json(hs, stream, send, sid_header, status_of)
                return
        elif status_of is not None:
            # 2026-07-28 with every answer an SSE stream: an error answer must still
            # carry its HTTP status (404, 400), which a stream committed to 200 cannot.
            # So wait as auto mode does; a lone error answer goes as JSON, the rest as SSE.
            if not self._decided(stream, True, generation):
                hs.active_requests += 1
                try:
                    if not await self._wait_decided(stream, True, generation, receive):
                        return
                finally:
                    hs.active_requests -= 1
                    hs.touch()
            parts = [data for _, data in stream.after(0)]
            if stream.done and not stream.mixed and len(parts) == 1 and status_of(parts[0]) != 200:
                await self._answer_json(hs, stream, send, sid_header, status_of)
                return
        priming = resumable and version is not None and versions.at_least(
            version, versions.V2025_11_25
        )
        # A stream detached (SSE polling) before it carried anything is not taken over:
        # its response is the priming event alone; the client resumes it with a GET.
        detached = stream.generation != generation
        await self.pump(hs, stream, 0, receive, send, sid_header, priming, attach=not detached)

    async def _wait_decided(
        self, stream: Stream, auto: bool, generation: int, receive: Receive
    ) -> bool:
        """Wait until :meth:`_decided` (auto: at most ``json_window``); False if the
        client left meanwhile."""
        # Most calls are answered within the window: waiting for them without a
        # disconnect watcher saves a task and two epoll changes per call. A client that
        # leaves meanwhile is noticed when the window ends.
        with trio.move_on_after(self.options.json_window):
            while not self._decided(stream, auto, generation):
                await stream.wait_changed()
        if auto or self._decided(stream, auto, generation):
            # auto: a call still silent after the window gets an SSE stream, so long
            # calls are primed (resumable) and their client sees headers.
            return True
        left = trio.CancelScope()
        with left:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(asgi.watch_disconnect, receive, left)
                while not self._decided(stream, auto, generation):
                    await stream.wait_changed()
                nursery.cancel_scope.cancel()
        return not left.cancelled_caught

    @staticmethod
    def _decided(stream: Stream, auto: bool, generation: int) -> bool:
        if stream.done:
            return True
        return auto and (stream.mixed or stream.generation != generation)

    async def _answer_json(
        self, hs: HttpSession, stream: Stream, send: Send, headers: list[tuple[bytes, bytes]],
        status_of: Callable[[bytes], int] | None = None,
    ) -> None:
        parts = [data for _, data in stream.after(0)]
        # Nobody can resume a JSON answer: its events need not be kept.
        hs.store.discard(stream)
        if not parts:
            if not hs.ended:
                # The client cancelled every request of this POST: nothing to answer.
                await asgi.send_response(send, 202)
                return
            await asgi.send_error(send, HttpError(500, "the session ended before answering",
                                                  -32603))
            return
        body = parts[0] if len(parts) == 1 else jsonrpc.encode_batch(parts)
        await asgi.send_json(send, body, headers, 200 if status_of is None else status_of(body))

    # -- GET and DELETE -------------------------------------------------------------------

    async def _get(self, headers: Headers, receive: Receive, send: Send) -> None:
        if self.options.stateless or not self.options.enable_get:
            await self._not_allowed(send)
            return
        err = check_accept_get(headers.get("accept")) or check_protocol_version(
            headers.get("mcp-protocol-version")
        )
        if err is not None:
            await asgi.send_error(send, err)
            return
        found = self._lookup(headers)
        if isinstance(found, HttpError):
            await asgi.send_error(send, found)
            return
        hs = found
        assert hs.session is not None
        version = hs.session.connection.protocol_version
        priming = version is not None and versions.at_least(version, versions.V2025_11_25)
        last = headers.get("last-event-id")
        if last is not None:
            where = hs.store.find(last)
            if where is None:
                await asgi.send_error(send, HttpError(400, "Bad Request: unknown Last-Event-ID"))
                return
            stream, after = where
        else:
            stream, after = hs.standalone, hs.standalone.delivered
        sid_header = [(b"mcp-session-id", hs.id.encode())]
        await self.pump(hs, stream, after, receive, send, sid_header, priming)

    async def _delete(self, headers: Headers, send: Send) -> None:
        if self.options.stateless or not self.options.enable_delete:
            await self._not_allowed(send)
            return
        err = check_protocol_version(headers.get("mcp-protocol-version"))
        if err is not None:
            await asgi.send_error(send, err)
            return
        found = self._lookup(headers)
        if isinstance(found, HttpError):
            await asgi.send_error(send, found)
            return
        self._forget(found)
        if self.cluster is not None:
            self.cluster.retire(found.id)  # [scale-out] gone for every worker
        assert found.session is not None
        found.session.close("deleted by the client")
        with trio.move_on_after(5):
            await found.session.closed.wait()
        await asgi.send_response(send, 200)

    async def pump(
        self, hs: HttpSession, stream: Stream, after: int, receive: Receive, send: Send,
        headers: list[tuple[bytes, bytes]], priming: bool, *, legacy: bool = False,
        attach: bool = True,
    ) -> None:
        """Take over ``stream`` and write it (after seq ``after``) as this SSE response
        (``attach=False``: only the head and priming event, leaving the stream alone)."""
        opts = PumpOptions(
            priming_retry_ms=self.options.retry_ms if priming else None,
            with_ids=not legacy,
            started=legacy,
            ping_interval=self.options.ping_interval,
        )
        generation = stream.attach() if attach else -1  # -1: never the stream's generation
        await pump_stream(hs, stream, after, generation, receive, send, headers, opts)


# Serving lives in http_serve.py; these names stay importable from here.
from mcpactor.transports.http_serve import HTTP_SERVERS, serve_app, serve_http  # noqa: E402
