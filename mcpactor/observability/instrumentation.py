"""The hooks a session calls while it is observed, and what they emit.

A :class:`SessionObserver` is made per session when :data:`switch.ACTIVE` is set (see
:mod:`mcpactor.session.session`, which calls it at a handful of points); it turns what
the session does into OpenTelemetry spans and histograms by the MCP semantic
conventions (:mod:`.semconv`), and into the Prometheus histograms of ``/metrics``:

- an inbound request: a SERVER span around its handler (the handler runs with the span
  current, so spans its code makes nest under it), parented by the W3C context in its
  ``params._meta`` (over HTTP: else the POST's headers, which are linked when both are
  there); progress it sends and the peer's cancellation are span events; an error
  answer, a raised exception, a cancellation and a tool's ``isError`` set
  ``error.type`` and the status;
- a request the connection answers itself (``initialize``, ``ping``, a refusal) and an
  inbound notification: a SERVER span of no length, parented the same way;
- an outbound request: a CLIENT span from send to answer, whose context is injected
  into ``params._meta``; progress received is a span event; an outbound notification:
  a CLIENT span of no length, injected likewise;
- the session's end: the session duration.

When the session is being recorded, each server span's trace and span ids are written
to the trace (an ``otel_span`` event, which a replay ignores), and the span carries
the trace file and the replay command (:data:`.semconv.REPLAY_COMMAND`).

Reads of the clock and of entropy made here and in OpenTelemetry are never part of a
recording (:mod:`mcpactor.tracing.entropy` leaves these modules out), so a recording
made with observation on replays with it off, and the other way round.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.observability import semconv
from mcpactor.protocol import connection as pc
from mcpactor.protocol import jsonrpc
from mcpactor.protocol.convert import to_wire
from mcpactor.protocol.errors import ConnectionClosed, McpError, RequestTimeout
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.tracing import entropy

if TYPE_CHECKING:
    from mcpactor.observability.otel import OtelSide
    from mcpactor.observability.prometheus import Gauges, PromMetrics
    from mcpactor.session.context import RequestContext
    from mcpactor.session.session import Session

__all__ = ["Instrumentation", "SessionObserver"]

_now = entropy.real("perf_counter")

Handle = Callable[["RequestContext"], Awaitable[Any]]


class Instrumentation:
    """What this process emits: OpenTelemetry (``otel``), Prometheus (``prom``), either
    or both; :data:`mcpactor.observability.switch.ACTIVE` holds the one in force."""

    def __init__(self, otel: OtelSide | None = None, prom: PromMetrics | None = None,
                 gauges: Gauges | None = None) -> None:
        self.otel = otel
        self.prom = prom
        #: Gauges read when Prometheus scrapes (see register_gauge).
        self.gauges: Gauges = gauges if gauges is not None else {}

    def session(self, session: Session) -> SessionObserver | None:
        """The observer of a new session (None: nothing to observe on it: a client's
        session when only Prometheus, a server-side matter, is on)."""
        server = session.connection.role.value == "server"
        if self.otel is None and not server:
            return None
        return SessionObserver(self, session, server)


class SessionObserver:
    """The hooks of one observed session (see the module)."""

    __slots__ = ("_calls", "_closed", "_http", "_spans", "base", "otel", "prom", "server",
                 "session", "started")

    def __init__(self, inst: Instrumentation, session: Session, server: bool) -> None:
        self.session = session
        self.server = server
        self.otel = inst.otel
        self.prom = inst.prom if server else None
        self.base: dict[str, Any] = semconv.transport_attributes(session.transport.name)
        self.base[semconv.SESSION_ID] = session.id
        self.started = _now()
        #: Spans of the inbound requests in flight (events land on them).
        self._spans: dict[RequestId, Any] = {}
        #: Spans of our requests in flight.
        self._calls: dict[RequestId, Any] = {}
        #: (HTTP) the trace context headers of the POST that carried each request.
        self._http: dict[RequestId, dict[str, str]] | None = None
        self._closed = False

    # -- attributes ------------------------------------------------------------------------

    def _attributes(self, method: str, params: Any, rid: RequestId | None,
                    version: str | None = None) -> tuple[str, dict[str, Any]]:
        target, attrs = semconv.target_of(method, params)
        attrs[semconv.METHOD] = method
        attrs.update(self.base)
        if version is None:
            version = self.session.connection.protocol_version
        if version is not None:
            attrs[semconv.PROTOCOL_VERSION] = version
        rid_text = semconv.request_id_text(rid)
        if rid_text is not None:
            attrs[semconv.REQUEST_ID] = rid_text
        return semconv.span_name(method, target), attrs

    def _parent(self, meta: Any, rid: RequestId | None) -> tuple[Any, list[Any] | None]:
        """The remote parent of an inbound message: its ``_meta`` context; over HTTP the
        request's headers' when ``_meta`` has none, linked when both are there."""
        assert self.otel is not None
        from mcpactor.observability import otel

        parent = otel.extract(meta) if isinstance(meta, dict) else None
        http = self._http.pop(rid, None) if (self._http and rid is not None) else None
        if http is None and rid is None:
            from mcpactor.observability.switch import HTTP_CARRIER

            http = HTTP_CARRIER.get()
        http_ctx = otel.extract(http) if http is not None else None
        if parent is None:
            return http_ctx, None
        if http_ctx is None:
            return parent, None
        linked = otel.span_context_of(http_ctx)
        if linked == otel.span_context_of(parent):
            return parent, None
        return parent, [otel.Link(linked)]

    # -- inbound requests --------------------------------------------------------------

    def wrap(self, handle: Handle) -> Handle:
        """``handle`` (the handler's ``handle_request``) run inside a server span."""

        async def observed(ctx: RequestContext) -> Any:
            return await self._handle(handle, ctx)

        return observed

    async def _handle(self, handle: Handle, ctx: RequestContext) -> Any:
        method, rid = ctx.method, ctx.id
        # The request's own revision (the stateless era's is in each request).
        name, attrs = self._attributes(method, ctx.params, rid, ctx.protocol_version)
        otel = self.otel
        span = token = None
        if otel is not None:
            from mcpactor.observability import otel as o

            parent, links = self._parent(ctx.meta, rid)
            self._recording(attrs, rid)
            span = otel.start(name, o.SpanKind.SERVER, attrs, parent, links)
            self._annotate(span, rid)
            self._spans[rid] = span
            token = o.attach(o.use(span, parent))
        started = _now()
        error: str | None = None
        message: str | None = None
        try:
            result = await handle(ctx)
        except McpError as exc:
            error, message = str(exc.code), exc.message
            if span is not None:
                span.set_attribute(semconv.STATUS_CODE, error)
            raise
        except trio.Cancelled:
            error = semconv.CANCELLED
            message = "cancelled" if self.session.close_reason is None else \
                f"cancelled: the session is closing ({self.session.close_reason})"
            raise
        except Exception as exc:
            # The session answers -32603 for it.
            error, message = "-32603", f"{type(exc).__name__}: {exc}"
            if span is not None:
                span.set_attribute(semconv.STATUS_CODE, error)
                span.record_exception(exc)
            raise
        else:
            if method == "tools/call" and semconv.is_tool_error(result):
                error, message = semconv.TOOL_ERROR, _tool_error_text(result)
            return result
        finally:
            seconds = _now() - started
            if span is not None:
                from mcpactor.observability import otel as o

                self._spans.pop(rid, None)
                o.detach(token)
                _end(span, error, message)
                attrs[semconv.ERROR_TYPE] = error
                assert otel is not None
                otel.record(semconv.SERVER_OPERATION_DURATION, seconds, _present(attrs))
            if self.prom is not None:
                self.prom.operation(method, error, seconds)

    def _recording(self, attrs: dict[str, Any], rid: RequestId) -> None:
        """Where this request is recorded, if it is: the file, and the command that
        replays up to it and shows its steps."""
        tracer = self.session.tracer
        file_for = getattr(tracer, "file_for", None)
        if file_for is None:
            return
        path = file_for(self.session.id)
        if path is None:
            return
        attrs[semconv.TRACE_FILE] = path
        attrs[semconv.TRACE_SESSION] = self.session.id
        attrs[semconv.TRACE_EVENT] = f"handler:{rid}"
        rid_arg = jsonrpc.dumps(rid).decode()
        attrs[semconv.REPLAY_COMMAND] = (
            f"mcpactor replay {shlex.quote(path)} --request={shlex.quote(rid_arg)} "
            f"--session={shlex.quote(self.session.id)}")

    def _annotate(self, span: Any, rid: RequestId) -> None:
        """Write the span's ids to the session's recording (an ``otel_span`` event)."""
        session = self.session
        if session._log is None:
            return
        sc = span.get_span_context()
        if not sc.is_valid:
            return
        session._emit(f"handler:{rid}", "otel_span", {
            "id": rid, "trace_id": f"{sc.trace_id:032x}", "span_id": f"{sc.span_id:016x}"})

    def progress_sent(self, rid: RequestId, progress: float, total: float | None,
                      message: str | None) -> None:
        """A handler reported progress for inbound request ``rid``."""
        span = self._spans.get(rid)
        if span is not None:
            span.add_event(semconv.EVENT_PROGRESS, _progress(progress, total, message))

    # -- what the connection reports ---------------------------------------------------

    def received(self, data: bytes, events: list[pc.Event]) -> None:
        """One inbound message's events, before they are routed."""
        for ev in events:
            t = type(ev)
            if t is pc.RequestReceived:
                continue  # its span is made around its handler
            if t is pc.BatchReceived:
                assert isinstance(ev, pc.BatchReceived)
                self.received(data, ev.events)
            elif t is pc.CancelReceived:
                assert isinstance(ev, pc.CancelReceived)
                span = self._spans.get(ev.request_id)
                if span is not None:
                    span.add_event(semconv.EVENT_CANCELLED, {
                        "mcp.cancel.reason": ev.reason or "", "mcp.cancel.by": "peer"})
                self._instant("notifications/cancelled", {"requestId": ev.request_id}, None)
            elif t is pc.ProgressReceived:
                assert isinstance(ev, pc.ProgressReceived)
                span = self._calls.get(ev.request_id)
                if span is not None:
                    span.add_event(semconv.EVENT_PROGRESS,
                                   _progress(ev.progress, ev.total, ev.message))
            elif t is pc.NotificationReceived:
                assert isinstance(ev, pc.NotificationReceived)
                self._instant(ev.method, ev.raw_params, None)
            elif t is pc.OperationStarted:
                self._instant("notifications/initialized", None, None)
            elif t is pc.Reply:
                assert isinstance(ev, pc.Reply)
                if ev.id is not None:
                    self._replied(data, ev)
                elif ev.why == "initialized" and self.otel is not None:
                    # (Client) the connection sends notifications/initialized itself.
                    self._sent("notifications/initialized", None)

    def _replied(self, data: bytes, ev: pc.Reply) -> None:
        """A request the connection answered by itself (initialize, ping, a refusal)."""
        request = _find_request(data, ev.id)
        method = request.get("method") if request is not None else None
        if not isinstance(method, str):
            return
        params = request.get("params") if request is not None else None
        error: str | None = None
        message: str | None = None
        if ev.data.find(b'"error"') >= 0:
            answer = _loads(ev.data)
            err = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(err, dict):
                error = str(err.get("code"))
                message = str(err.get("message"))
        self._instant(method, params, ev.id, error, message)

    def _instant(self, method: str, params: Any, rid: RequestId | None,
                 error: str | None = None, message: str | None = None) -> None:
        """A SERVER span of no length for something handled on arrival."""
        if self.otel is not None:
            from mcpactor.observability import otel as o

            name, attrs = self._attributes(method, params, rid)
            meta = params.get("_meta") if isinstance(params, dict) else None
            parent, links = self._parent(meta, rid)
            if error is not None:
                attrs[semconv.STATUS_CODE] = error
            span = self.otel.start(name, o.SpanKind.SERVER, attrs, parent, links)
            _end(span, error, message)
            attrs[semconv.ERROR_TYPE] = error
            self.otel.record(semconv.SERVER_OPERATION_DURATION, 0.0, _present(attrs))
        if self.prom is not None:
            self.prom.operation(method, error, 0.0)

    def http_delivery(self, data: bytes, parsed: Any) -> None:
        """(HTTP) a POST body is handed to the session: note its requests' trace context
        headers, for their spans (the session may take the message in another task)."""
        from mcpactor.observability.switch import HTTP_CARRIER

        carrier = HTTP_CARRIER.get()
        if carrier is None or self.otel is None:
            return
        if parsed is None:
            parsed = jsonrpc.parse(data)
        items = parsed.items if isinstance(parsed, jsonrpc.Batch) else [parsed]
        table = self._http
        if table is None:
            table = self._http = {}
        for item in items:
            if isinstance(item, jsonrpc.Request):
                table[item.id] = carrier
        while len(table) > 1024:  # requests that never reached a handler
            del table[next(iter(table))]

    # -- outbound --------------------------------------------------------------------------

    async def call(self, request: Callable[..., Awaitable[Any]], method: str, params: Any,
                   **options: Any) -> Any:
        """Our request, inside a CLIENT span whose context travels in ``params._meta``."""
        otel = self.otel
        if otel is None:
            return await request(method, params, **options)
        from mcpactor.observability import otel as o

        rid = self.session.connection.next_request_id
        name, attrs = self._attributes(method, params, rid)
        span = otel.start(name, o.SpanKind.CLIENT, attrs)
        params = _with_meta(params, o.inject(o.use(span)))
        self._calls[rid] = span
        started = _now()
        error: str | None = None
        message: str | None = None
        try:
            result = await request(method, params, **options)
        except RequestTimeout as exc:
            error, message = semconv.TIMEOUT, exc.message
            span.add_event(semconv.EVENT_CANCELLED,
                           {"mcp.cancel.reason": "timeout", "mcp.cancel.by": "local"})
            raise
        except ConnectionClosed as exc:
            error, message = semconv.CONNECTION_CLOSED, exc.message
            raise
        except McpError as exc:
            error, message = str(exc.code), exc.message
            span.set_attribute(semconv.STATUS_CODE, error)
            raise
        except trio.Cancelled:
            error, message = semconv.CANCELLED, "cancelled by the caller"
            span.add_event(semconv.EVENT_CANCELLED,
                           {"mcp.cancel.reason": message, "mcp.cancel.by": "local"})
            raise
        except Exception as exc:
            error, message = type(exc).__qualname__, str(exc)
            span.record_exception(exc)
            raise
        else:
            if method == "tools/call" and semconv.is_tool_error(result):
                error, message = semconv.TOOL_ERROR, _tool_error_text(result)
            return result
        finally:
            self._calls.pop(rid, None)
            _end(span, error, message)
            attrs[semconv.ERROR_TYPE] = error
            otel.record(semconv.CLIENT_OPERATION_DURATION, _now() - started, _present(attrs))

    def start_initialize(self) -> tuple[Any, dict[str, str] | None]:
        """(Client) the span of ``initialize`` and the ``_meta`` that carries it."""
        if self.otel is None:
            return None, None
        from mcpactor.observability import otel as o

        name, attrs = self._attributes("initialize", None,
                                       self.session.connection.next_request_id)
        span = self.otel.start(name, o.SpanKind.CLIENT, attrs)
        return (span, attrs, _now()), o.inject(o.use(span))

    def end_initialize(self, call: Any, error: BaseException | None) -> None:
        """(Client) ``initialize`` was answered, or failed with ``error``."""
        if call is None or self.otel is None:
            return
        span, attrs, started = call
        kind: str | None = None
        if error is not None:
            kind = (str(error.code) if isinstance(error, McpError)
                    and not isinstance(error, RequestTimeout | ConnectionClosed)
                    else semconv.TIMEOUT if isinstance(error, RequestTimeout | TimeoutError)
                    else semconv.CONNECTION_CLOSED if isinstance(error, ConnectionClosed)
                    else type(error).__qualname__)
        version = self.session.connection.protocol_version
        if version is not None:
            span.set_attribute(semconv.PROTOCOL_VERSION, version)
            attrs[semconv.PROTOCOL_VERSION] = version
        _end(span, kind, str(error) if error is not None else None)
        attrs[semconv.ERROR_TYPE] = kind
        self.otel.record(semconv.CLIENT_OPERATION_DURATION, _now() - started, _present(attrs))

    def notifying(self, method: str, params: Any) -> Any:
        """We send a notification: a CLIENT span of no length, injected into its
        ``_meta``. Returns the params to send."""
        if self.otel is None:
            return params
        from mcpactor.observability import otel as o

        span, _ = self._sent(method, params)
        return _with_meta(params, o.inject(o.use(span)))

    def _sent(self, method: str, params: Any) -> tuple[Any, dict[str, Any]]:
        """A CLIENT span of no length for a notification we send."""
        assert self.otel is not None
        from mcpactor.observability import otel as o

        name, attrs = self._attributes(method, params, None)
        span = self.otel.start(name, o.SpanKind.CLIENT, attrs)
        span.end()
        self.otel.record(semconv.CLIENT_OPERATION_DURATION, 0.0, attrs)
        return span, attrs

    # -- the end ---------------------------------------------------------------------------

    def closed(self) -> None:
        """The session ended: its duration."""
        if self._closed:
            return
        self._closed = True
        seconds = _now() - self.started
        error = semconv.session_error_type(self.session.close_reason)
        attrs = dict(self.base)
        version = self.session.connection.protocol_version
        if version is not None:
            attrs[semconv.PROTOCOL_VERSION] = version
        if error is not None:
            attrs[semconv.ERROR_TYPE] = error
        if self.otel is not None:
            metric = (semconv.SERVER_SESSION_DURATION if self.server
                      else semconv.CLIENT_SESSION_DURATION)
            self.otel.record(metric, seconds, attrs)
        if self.prom is not None:
            self.prom.session(error, seconds)


def _end(span: Any, error: str | None, message: str | None) -> None:
    if error is not None:
        from mcpactor.observability import otel as o

        span.set_attribute(semconv.ERROR_TYPE, error)
        span.set_status(o.Status(o.StatusCode.ERROR, message))
    span.end()


def _present(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if v is not None}


def _progress(progress: float, total: float | None, message: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"mcp.progress.value": float(progress)}
    if total is not None:
        out["mcp.progress.total"] = float(total)
    if message:
        out["mcp.progress.message"] = message
    return out


def _tool_error_text(result: Any) -> str | None:
    """The first text of an ``isError`` tool result (the status description)."""
    content = result.get("content") if isinstance(result, dict) else getattr(
        result, "content", None)
    for block in content or ():
        text = block.get("text") if isinstance(block, dict) else getattr(block, "text", None)
        if isinstance(text, str):
            return text[:500]
    return None


def _with_meta(params: Any, carrier: dict[str, str]) -> Any:
    """``params`` (wire dict, attrs object or None) with ``carrier`` in its ``_meta``."""
    if not carrier:
        return params
    if params is None:
        return {"_meta": dict(carrier)}
    wire = params if isinstance(params, dict) else to_wire(params)
    if not isinstance(wire, dict):
        return params
    meta = wire.get("_meta")
    merged = {**meta, **carrier} if isinstance(meta, dict) else dict(carrier)
    return {**wire, "_meta": merged}


def _loads(data: bytes) -> Any:
    try:
        return jsonrpc.loads(data)
    except ValueError:
        return None


def _find_request(data: bytes, rid: RequestId | None) -> dict[str, Any] | None:
    """The request with id ``rid`` in an inbound message (one, or a batch)."""
    obj = _loads(data)
    for item in obj if isinstance(obj, list) else [obj]:
        if isinstance(item, dict) and "method" in item and item.get("id") == rid:
            return item
    return None
