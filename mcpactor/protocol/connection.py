"""The sans-I/O MCP connection: messages in, events out; calls in, bytes out.

In the style of h11's ``Connection``: it does no I/O and knows nothing of Trio. It owns
every protocol rule that can be checked without a clock or a socket: lifecycle phases,
version negotiation, capability enforcement, request-id allocation and uniqueness, the
pending-request map, cancellation and progress correlation, and batching. The session
layer feeds it one transport message at a time with :meth:`Connection.receive` and
writes whatever bytes it returns.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs

from mcpactor.protocol import jsonrpc, modern, versions
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import (
    CapabilityNotSupported,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    McpError,
    MethodNotFound,
    ParseError,
    RemoteProtocolError,
    RequestCancelled,
    RequestError,
)
from mcpactor.protocol.events import (
    BatchReceived,
    CancelReceived,
    Dropped,
    ErrorReceived,
    Event,
    Initialized,
    NotificationReceived,
    OperationStarted,
    ProgressReceived,
    Reply,
    RequestReceived,
    ResponseReceived,
)
from mcpactor.protocol.jsonrpc import (
    ErrorObject,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
)
from mcpactor.protocol.lifecycle import (
    Role,
    State,
    has_capability,
    may_receive_request,
    may_send_notification,
    may_send_request,
)
from mcpactor.protocol.methods import EXTENSION_METHODS, METHODS, MethodSpec, modern_spec
from mcpactor.protocol.modern import CachePolicy, ModernRequest
from mcpactor.protocol.mrtr import InputRequiredResponse
from mcpactor.protocol.types.tasks_ext import DetailedTask


@attrs.define(slots=True)
class _Pending:
    method: str
    result_cls: Any
    progress_token: str | int | None
    last_progress: float | None = None


@attrs.define(slots=True)
class _KeptProgress:
    """The progress token of a request answered with a task: still valid."""

    rid: RequestId
    task_id: str
    last_progress: float | None = None


#: Progress tokens kept for tasks at most (the oldest is forgotten past it).
MAX_KEPT_TOKENS = 1024


def _created_task_id(result: dict[str, Any] | None) -> str | None:
    """The task id of a 2025-11-25 ``CreateTaskResult`` (None: not one)."""
    task = result.get("task") if type(result) is dict else None
    task_id = task.get("taskId") if type(task) is dict else None
    return task_id if type(task_id) is str else None


@attrs.define(slots=True)
class _Inbound:
    method: str
    progress_token: str | int | None
    last_progress: float | None = None
    cancelled: bool = False
    #: Set for a stateless (2026-07-28) request: its result is stamped on the way out.
    modern: ModernRequest | None = None


# How many cancelled outbound ids to remember, to tell a late response from a bogus one.
_CANCELLED_MEMORY = 1024


def _to_params(params: Any) -> dict[str, Any] | None:
    if params is None or isinstance(params, dict):
        return params
    out = to_wire(params)
    assert isinstance(out, dict)
    return out


class Connection:
    """One end of an MCP session, without I/O.

    ``capabilities`` and ``info`` are what we declare (wire form dicts). A server-role
    connection answers ``initialize`` and ``ping`` itself; a client-role connection starts
    the handshake with :meth:`start_initialize` and sends ``notifications/initialized``
    by itself when the result arrives.
    """

    def __init__(
        self,
        role: Role,
        *,
        info: dict[str, Any],
        capabilities: dict[str, Any] | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = versions.SUPPORTED_VERSIONS,
        extra_methods: frozenset[str] = frozenset(),
    ) -> None:
        self.role = role
        self.info = info
        self.capabilities: dict[str, Any] = capabilities or {}
        self.instructions = instructions
        self.supported_versions = supported_versions
        self.extra_methods = extra_methods
        self.state = State.AWAITING_INIT
        self.protocol_version: str | None = None
        #: Caching hints put on modern cacheable results (SEP-2549).
        self.cache_policy = CachePolicy()
        #: Client role, stateless era: the ``_meta`` stamped on every request we send
        #: (set by :meth:`adopt_modern`); None in a handshake session.
        self.modern_meta: dict[str, Any] | None = None
        self.peer_info: dict[str, Any] | None = None
        self.peer_capabilities: dict[str, Any] | None = None
        self.peer_instructions: str | None = None
        self._next_id = 0
        self._pending: dict[RequestId, _Pending] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        #: Progress tokens of answered requests that created a task (2025-11-25), valid
        #: until the task ends; oldest first.
        self._task_progress: OrderedDict[str | int, _KeptProgress] = OrderedDict()
        self._cancelled_out: OrderedDict[RequestId, None] = OrderedDict()
        self._inbound: dict[RequestId, _Inbound] = {}
        self._inbound_tokens: dict[str | int, RequestId] = {}
        self._initialize_id: RequestId | None = None
        self._gate_cache: dict[str, str | None] = {}
        #: Reading a message again with every number exact (see receive()).
        self._exact = False

    # -- inspection -------------------------------------------------------------------

    @property
    def next_request_id(self) -> int:
        """The id our next request will get."""
        return self._next_id + 1

    @property
    def pending_ids(self) -> frozenset[RequestId]:
        """Ids of our requests still waiting for an answer."""
        return frozenset(self._pending)

    @property
    def inbound_ids(self) -> frozenset[RequestId]:
        """Ids of the peer's requests we have not answered yet."""
        return frozenset(self._inbound)

    # -- inbound ----------------------------------------------------------------------

    def receive(
        self, data: bytes | str,
        parsed: jsonrpc.Message | jsonrpc.Invalid | jsonrpc.Batch | None = None,
    ) -> list[Event]:
        """Feed one transport message (an object or a batch); return what happened.

        ``parsed``: ``jsonrpc.parse(data)`` when the transport already did it (HTTP
        reads the body to check it), so it is not parsed twice.
        """
        if self.state is State.CLOSED:
            return [Dropped("session closed", data)]
        if parsed is None:
            try:
                parsed = jsonrpc.parse(data)
            except ParseError as exc:
                return [Reply(jsonrpc.encode_error(None, exc), "parse error")]
        if isinstance(parsed, jsonrpc.Batch):
            # parse() reads a batch exactly whenever an id or a progress token of its
            # items came out as a float (``_meta`` included), so a float still there is
            # one the peer sent: no progress token. Reading it again here could not
            # undo the items before it.
            self._exact = True
            try:
                return [self._receive_batch(parsed)]
            finally:
                self._exact = False
        out: list[Event] = []
        try:
            self._receive_one(parsed, out)
        except jsonrpc.InexactNumber:
            # A request's progress token wider than 64 bits, which orjson read as a
            # float: raised before anything changed, so read it again, exactly (a
            # float still there is a float: no progress token).
            exact = jsonrpc.parse_exact(data)
            assert not isinstance(exact, jsonrpc.Batch)
            out = []
            self._exact = True
            try:
                self._receive_one(exact, out)
            finally:
                self._exact = False
        return out

    def _receive_batch(self, batch: jsonrpc.Batch) -> Event:
        if not versions.allows_batches(self.protocol_version):
            version = self.protocol_version or "(not negotiated)"
            err = InvalidRequest(
                f"Invalid Request: JSON-RPC batches are not allowed by protocol version {version}"
            )
            return Reply(jsonrpc.encode_error(None, err), "batch refused")
        events: list[Event] = []
        for item in batch.items:
            if isinstance(item, Request) and item.method == "initialize":
                err = InvalidRequest("Invalid Request: initialize must not be part of a batch")
                events.append(Reply(jsonrpc.encode_error(item.id, err), "initialize in batch"))
                continue
            self._receive_one(item, events)
        expected = sum(1 for e in events if isinstance(e, (RequestReceived, Reply)))
        return BatchReceived(events, expected)

    def _receive_one(self, msg: jsonrpc.Message | Invalid, out: list[Event]) -> None:
        if isinstance(msg, Request):
            self._receive_request(msg, out)
        elif isinstance(msg, Notification):
            self._receive_notification(msg, out)
        elif isinstance(msg, Response):
            self._receive_response(msg.id, msg.result, None, out)
        elif isinstance(msg, ErrorResponse):
            if msg.id is None:
                out.append(Dropped("error response without id", msg))
            else:
                self._receive_response(msg.id, None, msg.error, out)
        else:
            out.append(Reply(jsonrpc.encode_error(msg.id, msg.error), "invalid message", msg.id))

    def _reject(self, rid: RequestId, error: McpError, out: list[Event]) -> None:
        out.append(Reply(jsonrpc.encode_error(rid, error), error.message, rid))

    def _receive_request(self, msg: Request, out: list[Event]) -> None:
        rid, method = msg.id, msg.method
        if self.role is Role.SERVER and modern.is_modern_request(method, msg.params):
            self._receive_modern(msg, out)
            return
        if method == "ping":
            out.append(Reply(jsonrpc.encode_response(rid, {}), "ping", rid))
            return
        reason = may_receive_request(self.role, self.state, method)
        if reason is not None:
            self._reject(rid, InvalidRequest(f"Invalid Request: {reason}"), out)
            return
        if rid in self._inbound:
            self._reject(
                rid,
                InvalidRequest(f"Invalid Request: request id {rid!r} is already in use"),
                out,
            )
            return
        if method == "initialize" and self.role is Role.SERVER:
            self._answer_initialize(rid, msg.params, out)
            return
        spec = METHODS.get(method)
        if spec is None or spec.kind != "request":
            if method in self.extra_methods:
                self._accept_request(rid, method, msg.params, msg.params, out)
                return
            self._reject(rid, MethodNotFound(f"Method not found: {method}"), out)
            return
        # The verdict depends only on the method once version and capabilities are fixed.
        cache = self._gate_cache
        if method in cache:
            problem = cache[method]
        else:
            problem = self._inbound_gate(spec)
            if self.protocol_version is not None:
                cache[method] = problem
        if problem is not None:
            self._reject(rid, MethodNotFound(f"Method not found: {method} ({problem})"), out)
            return
        self._accept_typed(spec, msg, out)

    def _receive_modern(self, msg: Request, out: list[Event]) -> None:
        """A stateless request (2026-07-28): checked against its own ``_meta``, never
        against this connection's handshake state, which it neither needs nor changes
        (a legacy session and modern requests can share one stdio pipe)."""
        rid, method = msg.id, msg.method
        try:
            meta = modern.read_request_meta(msg.params)
        except McpError as exc:
            self._reject(rid, exc, out)
            return
        if rid in self._inbound:
            self._reject(
                rid,
                InvalidRequest(f"Invalid Request: request id {rid!r} is already in use"),
                out,
            )
            return
        if method in modern.REMOVED_REQUESTS:
            self._reject(rid, MethodNotFound(
                f"Method not found: {method} (removed in protocol version {meta.version})"
            ), out)
            return
        if method == "server/discover":
            result = modern.discover_result(
                versions.capabilities_for(meta.version, self.capabilities), self.info,
                self.instructions)
            result = modern.complete_result(method, result, self.info, self.cache_policy)
            out.append(Reply(jsonrpc.encode_response(rid, result), "discover", rid))
            return
        spec = modern_spec(method)
        if spec is None or spec.kind != "request":
            if method in self.extra_methods or method in modern.MODERN_ONLY_METHODS:
                self._accept_request(rid, method, msg.params, msg.params, out, meta)
                return
            self._reject(rid, MethodNotFound(f"Method not found: {method}"), out)
            return
        problem = self._modern_gate(spec)
        if problem is not None:
            self._reject(rid, MethodNotFound(f"Method not found: {method} ({problem})"), out)
            return
        self._accept_typed(spec, msg, out, meta)

    def _modern_gate(self, spec: MethodSpec) -> str | None:
        """Why a modern client may not call this method on us, or None."""
        if spec.direction not in ("client_to_server", "both"):
            return "not a client-to-server method"
        if spec.capability is not None and not has_capability(self.capabilities, spec.capability):
            cap = ".".join(spec.capability)
            return f"capability {cap!r} was not declared"
        return None

    def _accept_typed(
        self, spec: MethodSpec, msg: Request, out: list[Event],
        meta: ModernRequest | None = None,
    ) -> None:
        """Read a request's params as its method's class (-32602 with the failing path
        when they do not fit), then accept it, in either era."""
        params: Any = msg.params
        if spec.params_cls is not None:
            try:
                params = from_wire(msg.params if msg.params is not None else {}, spec.params_cls)
            except InvalidParams as exc:
                self._reject(msg.id, exc, out)
                return
        self._accept_request(msg.id, msg.method, params, msg.params, out, meta)

    def _accept_request(
        self,
        rid: RequestId,
        method: str,
        params: Any,
        raw: dict[str, Any] | None,
        out: list[Event],
        declared: ModernRequest | None = None,
    ) -> None:
        token = None
        if raw is not None:
            meta = raw.get("_meta")
            if type(meta) is dict:
                token = meta.get("progressToken")
                if type(token) not in (str, int):
                    if type(token) is float and not self._exact:
                        raise jsonrpc.InexactNumber(token)
                    token = None
        self._inbound[rid] = _Inbound(method, token, modern=declared)
        if token is not None:
            self._inbound_tokens[token] = rid
        out.append(RequestReceived(rid, method, params, raw, token, declared))

    def _inbound_gate(self, spec: MethodSpec) -> str | None:
        """Why the peer may not call this method on us, or None."""
        wanted = "client_to_server" if self.role is Role.SERVER else "server_to_client"
        if spec.direction not in (wanted, "both"):
            return f"not a {self.role.peer.value}-to-{self.role.value} method"
        if not self._version_has(spec):
            return f"not part of protocol version {self.protocol_version}"
        if not self._capability_applies(spec):
            return None
        if not has_capability(self.capabilities, spec.capability):
            cap = ".".join(spec.capability or ())
            return f"capability {cap!r} was not declared"
        return None

    def _version_has(self, spec: MethodSpec) -> bool:
        # Extensions (SEP-2093's resources/metadata) are offered on every version.
        version = self.protocol_version
        return version is None or spec.method in EXTENSION_METHODS or spec.allowed_in(version)

    def _capability_applies(self, spec: MethodSpec) -> bool:
        # 2024-11-05 had completion/complete but no capability to declare it.
        if spec.capability == ("completions",) and self.protocol_version is not None:
            return versions.has_completions_capability(self.protocol_version)
        return True

    def _answer_initialize(
        self, rid: RequestId, raw: dict[str, Any] | None, out: list[Event]
    ) -> None:
        if raw is None or type(raw.get("protocolVersion")) is not str:
            self._reject(
                rid,
                InvalidParams(
                    "Invalid params: initialize needs a protocolVersion string",
                    data={"path": "params.protocolVersion"},
                ),
                out,
            )
            return
        caps = raw.get("capabilities")
        client_info = raw.get("clientInfo")
        if caps is not None and type(caps) is not dict:
            self._reject(
                rid,
                InvalidParams(
                    "Invalid params: capabilities must be an object",
                    data={"path": "params.capabilities"},
                ),
                out,
            )
            return
        version = versions.negotiate(raw["protocolVersion"], self.supported_versions)
        self.protocol_version = version
        self.peer_capabilities = caps or {}
        self.peer_info = client_info if type(client_info) is dict else {}
        self.state = State.INITIALIZING
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": versions.capabilities_for(version, self.capabilities),
            "serverInfo": self.info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        out.append(Reply(jsonrpc.encode_response(rid, result), "initialize", rid))
        out.append(Initialized(version, self.peer_info, self.peer_capabilities))

    def _receive_notification(self, msg: Notification, out: list[Event]) -> None:
        method = msg.method
        raw = msg.params
        if method == "notifications/cancelled":
            self._receive_cancel(raw, out)
            return
        if method == "notifications/progress":
            self._receive_progress(raw, out)
            return
        if method == "notifications/initialized":
            if self.role is Role.SERVER and self.state is State.INITIALIZING:
                self.state = State.OPERATING
                out.append(OperationStarted())
            else:
                out.append(Dropped("unexpected initialized notification", msg))
            return
        if self.state is State.AWAITING_INIT:
            out.append(Dropped("notification before initialization", msg))
            return
        spec = METHODS.get(method) if self.modern_meta is None else modern_spec(method)
        if spec is None or spec.kind != "notification":
            if method in self.extra_methods or (
                    self.modern_meta is not None and method in modern.MODERN_ONLY_NOTIFICATIONS):
                out.append(NotificationReceived(method, raw, raw))
            else:
                out.append(Dropped(f"unknown notification {method}", msg))
            return
        params: Any = raw
        if spec.params_cls is not None:
            try:
                params = from_wire(raw if raw is not None else {}, spec.params_cls)
            except InvalidParams as exc:
                out.append(Dropped(f"malformed {method}: {exc.message}", msg))
                return
        out.append(NotificationReceived(method, params, raw))

    def _receive_cancel(self, raw: dict[str, Any] | None, out: list[Event]) -> None:
        rid = raw.get("requestId") if raw else None
        if type(rid) not in (str, int):
            out.append(Dropped("cancellation without a valid requestId", raw))
            return
        assert rid is not None
        pending = self._pending.get(rid) if self.role is Role.CLIENT else None
        if pending is not None and pending.method in modern.MODERN_ONLY_METHODS:
            # 2026-07-28: a server tears a subscriptions/listen stream down so; the request
            # is over, answered by no response.
            del self._pending[rid]
            reason = raw.get("reason") if raw else None
            out.append(ErrorReceived(rid, pending.method, RequestCancelled(
                f"the server ended {pending.method} (id {rid!r})"
                + (f": {reason}" if type(reason) is str else ""))))
            return
        inbound = self._inbound.get(rid)
        if inbound is None:
            out.append(Dropped(f"cancellation for unknown or finished request {rid!r}", raw))
            return
        if inbound.method == "initialize":
            out.append(Dropped("initialize cannot be cancelled", raw))
            return
        if inbound.cancelled:
            out.append(Dropped(f"request {rid!r} was already cancelled", raw))
            return
        inbound.cancelled = True
        reason = raw.get("reason") if raw else None
        out.append(CancelReceived(rid, reason if type(reason) is str else None))

    def _receive_progress(self, raw: dict[str, Any] | None, out: list[Event]) -> None:
        token = raw.get("progressToken") if raw else None
        rid = self._progress_tokens.get(token) if type(token) in (str, int) else None  # type: ignore[arg-type]
        if raw is None or rid is None:
            out.append(Dropped("progress for an unknown token", raw))
            return
        progress = raw.get("progress")
        if not isinstance(progress, (int, float)) or isinstance(progress, bool):
            out.append(Dropped("progress without a numeric progress value", raw))
            return
        pending: _Pending | _KeptProgress | None = self._pending.get(rid)
        if pending is None:
            # A request answered with a task (2025-11-25): its token stays valid for the
            # task's whole life.
            pending = self._task_progress.get(token)  # type: ignore[arg-type]
            if pending is None:
                out.append(Dropped("progress for an unknown token", raw))
                return
        if pending.last_progress is not None and progress <= pending.last_progress:
            out.append(Dropped("progress did not increase", raw))
            return
        pending.last_progress = progress
        total = raw.get("total")
        message = raw.get("message")
        assert token is not None
        out.append(
            ProgressReceived(
                rid,
                token,
                progress,
                total if type(total) in (int, float) else None,
                message if type(message) is str else None,
            )
        )

    def _receive_response(
        self,
        rid: RequestId,
        result: dict[str, Any] | None,
        error: ErrorObject | None,
        out: list[Event],
    ) -> None:
        pending = self._pending.pop(rid, None)
        if pending is None:
            if rid in self._cancelled_out:
                del self._cancelled_out[rid]
                out.append(Dropped(f"response to cancelled request {rid!r}", result or error))
            else:
                out.append(Dropped(f"response to unknown request id {rid!r}", result or error))
            return
        if pending.progress_token is not None:
            task_id = (_created_task_id(result) if error is None and self.modern_meta is None
                       else None)
            if task_id is not None:
                self._keep_task_progress(pending, rid, task_id)
            else:
                self._progress_tokens.pop(pending.progress_token, None)
        if error is not None:
            exc = RequestError(error.message, code=error.code, data=error.data)
            if rid == self._initialize_id:
                self.state = State.CLOSED
            out.append(ErrorReceived(rid, pending.method, exc))
            return
        assert result is not None
        if rid == self._initialize_id:
            self._finish_initialize(rid, result, out)
            return
        if self.modern_meta is not None and result.get("resultType") == "input_required":
            # MRTR: not the method's result but a request for input; the client answers
            # it and sends the request again.
            out.append(ResponseReceived(rid, pending.method, InputRequiredResponse.of(result)))
            return
        value: Any = result
        result_cls = pending.result_cls
        if self.modern_meta is not None and result.get("resultType") == "task":
            # The tasks extension (SEP-2663): not the method's result but the task that
            # will produce it.
            result_cls = DetailedTask
        if result_cls is not None:
            try:
                value = from_wire(result, result_cls)
            except InvalidParams as exc:
                err = RemoteProtocolError(
                    f"malformed {pending.method} result: {exc.message}",
                    code=exc.code,
                    data=exc.data,
                )
                out.append(ErrorReceived(rid, pending.method, err))
                return
        out.append(ResponseReceived(rid, pending.method, value))

    def _keep_task_progress(self, pending: _Pending, rid: RequestId, task_id: str) -> None:
        """The request ``rid`` was answered with a new task: the spec keeps its progress
        token valid until the task ends (:meth:`end_task_progress`). Bounded: past
        :data:`MAX_KEPT_TOKENS` the oldest is forgotten."""
        token = pending.progress_token
        assert token is not None
        kept = self._task_progress
        kept[token] = _KeptProgress(rid, task_id, pending.last_progress)
        while len(kept) > MAX_KEPT_TOKENS:
            old, _ = kept.popitem(last=False)
            self._progress_tokens.pop(old, None)

    def keeps_progress(self, rid: RequestId) -> bool:
        """Whether the progress token of the answered request ``rid`` stays valid (it
        created a task that has not ended)."""
        token = next((k for k, v in self._progress_tokens.items() if v == rid), None)
        return token is not None and token in self._task_progress

    def end_task_progress(self, task_id: str) -> list[RequestId]:
        """The task ended: forget the progress tokens kept for it; the ids of the
        requests that created it."""
        ended = [(token, kept.rid) for token, kept in self._task_progress.items()
                 if kept.task_id == task_id]
        for token, _ in ended:
            del self._task_progress[token]
            self._progress_tokens.pop(token, None)
        return [rid for _, rid in ended]

    def _finish_initialize(self, rid: RequestId, result: dict[str, Any], out: list[Event]) -> None:
        version = result.get("protocolVersion")
        if type(version) is not str or version not in self.supported_versions:
            self.state = State.CLOSED
            err = RemoteProtocolError(
                f"the server chose protocol version {version!r}, which this client does "
                f"not support (supported: {', '.join(self.supported_versions)})"
            )
            out.append(ErrorReceived(rid, "initialize", err))
            return
        caps = result.get("capabilities")
        info = result.get("serverInfo")
        instructions = result.get("instructions")
        self.protocol_version = version
        self.peer_capabilities = caps if type(caps) is dict else {}
        self.peer_info = info if type(info) is dict else {}
        self.peer_instructions = instructions if type(instructions) is str else None
        self.state = State.OPERATING
        # The initialized notification must precede anything else we send.
        out.append(
            Reply(jsonrpc.encode_notification("notifications/initialized", None), "initialized")
        )
        out.append(
            Initialized(version, self.peer_info, self.peer_capabilities, self.peer_instructions)
        )
        out.append(ResponseReceived(rid, "initialize", result))

    # -- outbound ---------------------------------------------------------------------

    def start_discover(self, version: str) -> tuple[RequestId, bytes]:
        """Client: the ``server/discover`` probe at ``version``, sent before anything
        else (it leaves the handshake possible: a legacy server refuses it and the client
        then sends ``initialize``)."""
        if self.role is not Role.CLIENT or self.state is not State.AWAITING_INIT:
            raise LocalProtocolError("server/discover is a client's first request")
        rid = self._allocate_id()
        self._pending[rid] = _Pending("server/discover", None, None)
        params = {"_meta": {
            modern.META_PROTOCOL_VERSION: version,
            modern.META_CLIENT_INFO: self.info,
            modern.META_CLIENT_CAPABILITIES: self.capabilities,
        }}
        return rid, jsonrpc.encode_request(rid, "server/discover", params)

    def adopt_modern(
        self, version: str, server: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Client: speak the stateless revision ``version`` (no handshake). ``server``:
        the ``server/discover`` result (its capabilities, identity and instructions),
        if one was fetched. Every request from now on carries the per-request
        ``_meta`` (``meta``: extra keys for it)."""
        if self.role is not Role.CLIENT:
            raise LocalProtocolError("only a client adopts a protocol version")
        server = server or {}
        caps = server.get("capabilities")
        result_meta = server.get("_meta")
        info = result_meta.get(modern.META_SERVER_INFO) if type(result_meta) is dict else None
        if info is None:
            # Some servers put it beside the capabilities, as initialize did.
            info = server.get("serverInfo")
        instructions = server.get("instructions")
        self.protocol_version = version
        # Pinned without a discover result: the server's capabilities are unknown, so
        # the server, not us, says what it does not have.
        self.peer_capabilities = caps if type(caps) is dict else None
        self.peer_info = info if type(info) is dict else {}
        self.peer_instructions = instructions if type(instructions) is str else None
        self.modern_meta = {
            modern.META_PROTOCOL_VERSION: version,
            modern.META_CLIENT_INFO: self.info,
            modern.META_CLIENT_CAPABILITIES: self.capabilities,
            **(meta or {}),
        }
        self.state = State.OPERATING

    def set_log_level(self, level: str | None) -> None:
        """Client, stateless era: the minimum level of log messages every request asks
        for from now on (``_meta`` ``io.modelcontextprotocol/logLevel``; None: none at
        all, the revision's default)."""
        if self.modern_meta is None:
            raise LocalProtocolError("set_log_level is for the stateless era: a handshake "
                                     "session sends logging/setLevel")
        modern.check_log_level(level)
        if level is None:
            self.modern_meta.pop(modern.META_LOG_LEVEL, None)
        else:
            self.modern_meta[modern.META_LOG_LEVEL] = level

    def start_initialize(
        self,
        protocol_version: str = versions.LATEST_VERSION,
        meta: dict[str, Any] | None = None,
    ) -> tuple[RequestId, bytes]:
        """Client: begin the handshake; returns the request id and the bytes to send."""
        if self.role is not Role.CLIENT:
            raise LocalProtocolError("only a client sends initialize")
        reason = may_send_request(self.role, self.state, "initialize")
        if reason is not None:
            raise LocalProtocolError(reason)
        params: dict[str, Any] = {
            "protocolVersion": protocol_version,
            "capabilities": self.capabilities,
            "clientInfo": self.info,
        }
        if meta:
            params["_meta"] = meta
        rid = self._allocate_id()
        self._initialize_id = rid
        self._pending[rid] = _Pending("initialize", None, None)
        self.state = State.INITIALIZING
        return rid, jsonrpc.encode_request(rid, "initialize", params)

    def _allocate_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _outbound_gate(self, method: str, spec: MethodSpec | None) -> None:
        if spec is None:
            if method in self.extra_methods:
                return
            raise LocalProtocolError(f"unknown method {method!r}")
        wanted = "client_to_server" if self.role is Role.CLIENT else "server_to_client"
        if spec.direction not in (wanted, "both"):
            raise LocalProtocolError(f"a {self.role.value} does not send {method}")
        if not self._version_has(spec):
            raise CapabilityNotSupported(
                f"cannot send {method}: protocol version {self.protocol_version} does not have it"
            )
        if spec.capability is None or not self._capability_applies(spec):
            return
        if spec.kind == "request":
            if self.modern_meta is not None and self.peer_capabilities is None:
                return
            # A request needs the capability of the side that handles it.
            if not has_capability(self.peer_capabilities, spec.capability):
                cap = ".".join(spec.capability)
                raise CapabilityNotSupported(
                    f"cannot send {method}: the {self.role.peer.value} did not declare "
                    f"the {cap!r} capability"
                )
        elif not has_capability(self.capabilities, spec.capability):
            cap = ".".join(spec.capability)
            raise CapabilityNotSupported(
                f"cannot send {method}: we did not declare the {cap!r} capability"
            )

    def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        want_progress: bool = False,
        result_cls: Any = None,
    ) -> tuple[RequestId, bytes]:
        """Allocate an id and encode a request. ``want_progress`` adds a progress token
        (the request id itself, which is unique for this direction)."""
        if method == "initialize":
            raise LocalProtocolError("use start_initialize() to send initialize")
        reason = may_send_request(self.role, self.state, method)
        if reason is not None:
            raise LocalProtocolError(reason)
        spec = METHODS.get(method) if self.modern_meta is None else modern_spec(method)
        if self.modern_meta is not None and method in modern.REMOVED_REQUESTS:
            raise LocalProtocolError(modern.removed_method_error(method, self.protocol_version))
        if self.modern_meta is None or method not in modern.MODERN_ONLY_METHODS:
            self._outbound_gate(method, spec)
        wire = _to_params(params)
        if self.modern_meta is not None:
            wire = dict(wire) if wire else {}
            wire["_meta"] = {**self.modern_meta, **(wire.get("_meta") or {})}
        rid = self._allocate_id()
        token: int | None = None
        if want_progress:
            token = rid
            wire = dict(wire) if wire else {}
            meta = dict(wire.get("_meta") or {})
            meta["progressToken"] = token
            wire["_meta"] = meta
            self._progress_tokens[token] = rid
        if result_cls is None and spec is not None:
            result_cls = spec.result_cls
        self._pending[rid] = _Pending(method, result_cls, token)
        return rid, jsonrpc.encode_request(rid, method, wire)

    def send_notification(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> bytes | None:
        """Encode a notification after checking the phase and our capabilities.

        ``related``: the inbound request it belongs to. For a stateless request there
        is no phase to check: the notification goes with the request while it is in
        flight (None once it was answered or cancelled)."""
        if related is not None:
            inbound = self._inbound.get(related)
            if inbound is not None and inbound.modern is not None:
                if inbound.cancelled:
                    return None
                return jsonrpc.encode_notification(method, _to_params(params))
        if self.modern_meta is not None and method in modern.REMOVED_NOTIFICATIONS:
            raise LocalProtocolError(modern.removed_method_error(method, self.protocol_version))
        reason = may_send_notification(self.role, self.state, method)
        if reason is not None:
            raise LocalProtocolError(reason)
        if method not in ("notifications/cancelled", "notifications/progress"):
            self._outbound_gate(method, METHODS.get(method))
        return jsonrpc.encode_notification(method, _to_params(params))

    def send_response(self, rid: RequestId, result: Any) -> bytes | None:
        """Encode the answer to an inbound request; None if it was cancelled meanwhile.

        Encoding happens before the request is marked finished, so a result that cannot
        be encoded raises with the request still open for :meth:`send_error`.
        """
        inbound = self._inbound.get(rid)
        if inbound is None:
            return None
        wire = _to_params(result)
        if inbound.modern is not None:
            wire = modern.complete_result(inbound.method, wire or {}, self.info,
                                          self.cache_policy)
        data = jsonrpc.encode_response(rid, wire if wire is not None else {})
        inbound = self._finish_inbound(rid)
        if inbound is None or inbound.cancelled:
            return None
        return data

    def send_error(self, rid: RequestId, error: McpError) -> bytes | None:
        """Encode an error answer to an inbound request; None if it was cancelled."""
        inbound = self._finish_inbound(rid)
        if inbound is None or inbound.cancelled:
            return None
        return jsonrpc.encode_error(rid, error)

    def forget_request(self, rid: RequestId) -> None:
        """The application finished an inbound request without answering (cancelled)."""
        self._finish_inbound(rid)

    def _finish_inbound(self, rid: RequestId) -> _Inbound | None:
        inbound = self._inbound.pop(rid, None)
        if inbound is not None and inbound.progress_token is not None:
            self._inbound_tokens.pop(inbound.progress_token, None)
        return inbound

    def is_cancelled(self, rid: RequestId) -> bool:
        """Whether the peer cancelled this inbound request."""
        inbound = self._inbound.get(rid)
        return inbound is not None and inbound.cancelled

    def send_progress(
        self,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bytes | None:
        """Encode a progress notification, or None when it must not be sent: the request
        already finished or was cancelled, or ``progress`` did not increase."""
        rid = self._inbound_tokens.get(token)
        if rid is None:
            return None
        inbound = self._inbound[rid]
        if inbound.cancelled:
            return None
        if inbound.last_progress is not None and progress <= inbound.last_progress:
            return None
        inbound.last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.protocol_version != versions.V2024_11_05:
            params["message"] = message
        return jsonrpc.encode_notification("notifications/progress", params)

    def cancel_request(self, rid: RequestId, reason: str | None = None) -> bytes | None:
        """Give up on one of our requests; returns the cancellation to send, or None when
        the request is no longer pending. A response that still arrives is dropped."""
        if rid == self._initialize_id:
            raise LocalProtocolError("initialize must not be cancelled")
        pending = self._pending.pop(rid, None)
        if pending is None:
            return None
        if pending.progress_token is not None:
            self._progress_tokens.pop(pending.progress_token, None)
        self._cancelled_out[rid] = None
        if len(self._cancelled_out) > _CANCELLED_MEMORY:
            self._cancelled_out.popitem(last=False)
        params: dict[str, Any] = {"requestId": rid}
        if reason is not None:
            params["reason"] = reason
        return jsonrpc.encode_notification("notifications/cancelled", params)

    def abandon_request(self, rid: RequestId) -> None:
        """Forget one of our requests without telling the peer (session ending)."""
        pending = self._pending.pop(rid, None)
        if pending is not None and pending.progress_token is not None:
            self._progress_tokens.pop(pending.progress_token, None)

    def close(self) -> None:
        """The session is over: nothing more is sent or accepted."""
        self.state = State.CLOSED


__all__ = [
    "BatchReceived",
    "CancelReceived",
    "Connection",
    "Dropped",
    "ErrorReceived",
    "Event",
    "Initialized",
    "NotificationReceived",
    "OperationStarted",
    "ProgressReceived",
    "Reply",
    "RequestReceived",
    "ResponseReceived",
    "Role",
    "State",
]
