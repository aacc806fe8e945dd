"""``Client``: calling an MCP server, and answering what the server asks back."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

import attrs
import trio

from mcpactor import __version__
from mcpactor.client import tasks as client_tasks
from mcpactor.client.handlers import (
    ElicitationHandler,
    HandlerContext,
    NotificationCallback,
    RootsProvider,
    SamplingHandler,
    call,
    positional_count,
)
from mcpactor.client.listen import ACKNOWLEDGED, Subscription, listen_filter, subscription_of
from mcpactor.client.results import ToolResult, typed_result
from mcpactor.protocol import connection as pc
from mcpactor.protocol import types as t
from mcpactor.protocol import versions
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    CapabilityNotSupported,
    ConnectionClosed,
    InternalError,
    InvalidResult,
    LocalProtocolError,
    McpError,
    MethodNotFound,
    RemoteProtocolError,
    RequestError,
)
from mcpactor.protocol.headers import invalid_header_annotation
from mcpactor.protocol.json_schema import first_error
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.lifecycle import Role
from mcpactor.protocol.methods import METHODS
from mcpactor.protocol.modern import META_CLIENT_CAPABILITIES
from mcpactor.protocol.mrtr import InputRequiredResponse
from mcpactor.session.context import RequestContext
from mcpactor.session.groups import plain_errors
from mcpactor.session.session import Limits, Session
from mcpactor.session.tracker import ProgressCallback, Timeout, Waiter
from mcpactor.tasks import wire as tasks_wire
from mcpactor.tasks.handle import TaskHandle, TaskWatchers
from mcpactor.tasks.runtime import TaskOptions, TaskRuntime
from mcpactor.tracing.tasks import TRACK, current_node, follow_current
from mcpactor.tracing.tracer import Tracer
from mcpactor.transports.base import Transport

#: How long ``mode="auto"`` waits for the ``server/discover`` probe before handshaking,
#: over a stream transport (stdio), where a server that ignores unknown requests would
#: otherwise hold the connection up; generous, since that time also covers a slow start
#: (a Python server importing on a busy machine). Over HTTP every server answers a
#: request it does not know (400, 404): the probe has the whole ``init_timeout``.
DISCOVER_TIMEOUT = 10.0

log = logging.getLogger("mcpactor.client")

def _handler(*choices: int) -> Any:
    """An attrs validator: the handler can be called with one of ``choices`` positional
    arguments (checked when set, so a wrong signature is found at registration)."""

    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is None or (attribute.name == "roots" and isinstance(value, list)):
            return
        positional_count(value, attribute.name, choices)

    return check


@attrs.define
class ClientHandlers:
    """What the client does when the server asks (and what it declares it can do).

    A capability is declared exactly when its handler is given: ``sampling`` with a
    sampling handler, ``elicitation`` with an elicitation handler, ``roots`` with roots.
    Handlers take the request's typed params and, if they declare a second parameter,
    a :class:`HandlerContext`: ``async def sampling(params, ctx=None)``. A handler
    that cannot be called so is a TypeError here, naming it and the signature expected.
    """

    sampling: SamplingHandler | None = attrs.field(default=None, validator=_handler(2, 1))
    elicitation: ElicitationHandler | None = attrs.field(default=None, validator=_handler(2, 1))
    #: Form and URL elicitation modes to declare (2025-11-25); form only by default.
    elicitation_modes: tuple[str, ...] = ("form",)
    roots: RootsProvider | None = attrs.field(default=None, validator=_handler(1, 0))
    on_log: NotificationCallback | None = attrs.field(default=None, validator=_handler(1))
    on_tools_changed: NotificationCallback | None = attrs.field(
        default=None, validator=_handler(1))
    on_resources_changed: NotificationCallback | None = attrs.field(
        default=None, validator=_handler(1))
    on_prompts_changed: NotificationCallback | None = attrs.field(
        default=None, validator=_handler(1))
    on_resource_updated: NotificationCallback | None = attrs.field(
        default=None, validator=_handler(1))
    on_notification: NotificationCallback | None = attrs.field(
        default=None, validator=_handler(1))
    #: Run the server's sampling and elicitation requests as tasks when it asks
    #: (2025-11-25): True, or :class:`~mcpactor.tasks.TaskOptions` for TTLs and limits.
    tasks: TaskOptions | bool | None = None

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers imply (wire form)."""
        caps: dict[str, Any] = {}
        if self.sampling is not None:
            caps["sampling"] = {}
        if self.elicitation is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.tasks and (self.sampling is not None or self.elicitation is not None):
            caps["tasks"] = client_tasks.capability(self.sampling is not None,
                                                    self.elicitation is not None)
        return caps


class _ClientHandler:
    """Implements :class:`mcpactor.session.SessionHandler` for the client role."""

    def __init__(self, handlers: ClientHandlers) -> None:
        self.h = handlers
        #: Each listed tool's outputSchema (None: it has none), for checking its results;
        #: forgotten when the server says its tools changed.
        self.output_schemas: dict[str, dict[str, Any] | None] = {}
        #: The client's task handles, for the server's status notifications to reach.
        self.task_watchers = TaskWatchers()
        #: Runs the server's requests the client accepts as tasks (ClientHandlers.tasks).
        self.task_runtime: TaskRuntime | None = None
        if handlers.tasks:
            self.task_runtime = TaskRuntime(
                handlers.tasks if isinstance(handlers.tasks, TaskOptions) else None)
        #: Handshake-era listens (Client.listen): each hears the notifications its
        #: filter admits, untagged.
        self.local_subscriptions: list[Subscription] = []
        #: The transport's ``tool_schemas`` when it mirrors tool arguments into headers
        #: (Streamable HTTP, SEP-2243); forgotten with the output schemas.
        self.header_schemas: dict[str, Any] | None = None
        #: Open ``subscriptions/listen`` requests by id (2026-07-28).
        self.subscriptions: dict[RequestId, Subscription] = {}

    async def handle_request(self, rc: RequestContext) -> Any:
        runtime = self.task_runtime
        if runtime is not None:
            if rc.method in tasks_wire.METHODS:
                return await tasks_wire.answer(runtime, rc)
            if (getattr(rc.params, "task", None) is not None
                    and t.accepts_task(rc.session.connection.capabilities, rc.method)):
                return await client_tasks.start_task(runtime, rc, self._answer)
        return await self._answer(rc)

    async def _answer(self, rc: RequestContext) -> Any:
        """The answer to a server request: the one path of a plain request and a task."""
        h = self.h
        if rc.method == "sampling/createMessage" and h.sampling is not None:
            return await call(h.sampling, _args(h.sampling, "sampling", (2, 1), rc, rc.params))
        if rc.method == "elicitation/create" and h.elicitation is not None:
            result = await call(
                h.elicitation, _args(h.elicitation, "elicitation", (2, 1), rc, rc.params))
            _check_elicited(rc.params, result)
            return result
        if rc.method == "roots/list" and h.roots is not None:
            roots = h.roots if isinstance(h.roots, list) else await call(
                h.roots, _args(h.roots, "roots", (1, 0), rc))
            return t.ListRootsResult(roots=roots)
        raise MethodNotFound(f"Method not found: {rc.method}")

    async def handle_notification(self, session: Session, event: pc.NotificationReceived) -> None:
        h = self.h
        sid = subscription_of(event.raw_params) if self.subscriptions else None
        sub = self.subscriptions.get(sid) if sid is not None else None
        if sub is not None:
            # A subscription's own stream: its iterator gets it (and the callbacks below
            # still see the changes, as they would in a handshake session).
            sub.deliver(event.method, event.raw_params or {})
            if event.method == ACKNOWLEDGED:
                return
        elif self.local_subscriptions:
            for local in self.local_subscriptions:
                if local.admits(event.method, event.raw_params or {}):
                    local.deliver(event.method, event.raw_params or {})
        if event.method == "notifications/tools/list_changed":
            self.output_schemas.clear()
            if self.header_schemas is not None:
                self.header_schemas.clear()
        elif event.method in ("notifications/tasks/status", "notifications/tasks"):
            self.task_watchers.deliver(event.params)
        cb = {
            "notifications/message": h.on_log,
            "notifications/tools/list_changed": h.on_tools_changed,
            "notifications/resources/list_changed": h.on_resources_changed,
            "notifications/prompts/list_changed": h.on_prompts_changed,
            "notifications/resources/updated": h.on_resource_updated,
        }.get(event.method)
        for fn in (cb, h.on_notification):
            if fn is not None:
                r = fn(event.params if fn is cb else event)
                if r is not None:
                    await r

    def on_initialized(self, session: Session, event: pc.Initialized) -> None:
        pass

    def on_operation_started(self, session: Session) -> None:
        pass

    def on_closed(self, session: Session) -> None:
        pass


def _args(fn: Any, field: str, choices: tuple[int, ...], rc: RequestContext,
          *params: Any) -> tuple[Any, ...]:
    """The arguments a handler takes: its params, then a HandlerContext if it has room."""
    n = positional_count(fn, field, choices)
    full = (*params, HandlerContext(rc))
    return full[:n]


def _check_elicited(params: Any, result: Any) -> None:
    """Both sides SHOULD check elicitation content against the requested schema: content
    our own handler made up that the server's form cannot hold is our bug, said here
    rather than left for the server to puzzle over."""
    schema = getattr(params, "requested_schema", None)
    content = result.get("content") if isinstance(result, dict) else getattr(
        result, "content", None)
    action = result.get("action") if isinstance(result, dict) else getattr(result, "action", None)
    if schema is None or action != "accept" or content is None:
        return
    error = first_error(to_wire(content), schema)
    if error is not None:
        raise InternalError(
            f"the elicitation handler's content does not match the requested schema: {error}",
            data={"path": error.path, "reason": error.reason})


class Client:
    """A connected, initialized MCP client session.

    Get one from :func:`connect_stdio` (or another ``connect_*``); every method sends one
    request and returns its typed result. ``timeout`` is in seconds (or a
    :class:`Timeout` for progress-reset and hard-maximum control); cancelling the
    calling task cancels the request on the server too.
    """

    def __init__(self, session: Session, default_timeout: Timeout | float | None = None) -> None:
        self.session = session
        self.default_timeout = default_timeout
        self.init_result: dict[str, Any] = {}
        #: The ``server/discover`` result when the client speaks 2026-07-28 after a probe.
        self.discover_result: dict[str, Any] | None = None
        #: How many ``input_required`` rounds one request may take (2026-07-28).
        self.max_input_rounds = 10
        self._listen_lock = trio.Lock()
        handler = session.handler
        self._output_schemas: dict[str, dict[str, Any] | None] | None = (
            handler.output_schemas if isinstance(handler, _ClientHandler) else None)
        self._task_watchers: TaskWatchers | None = (
            handler.task_watchers if isinstance(handler, _ClientHandler) else None)
        #: The transport's schemas for SEP-2243 ``Mcp-Param-*`` headers (HTTP only).
        self._header_schemas: dict[str, Any] | None = getattr(
            session.transport, "tool_schemas", None)
        if isinstance(handler, _ClientHandler):
            handler.header_schemas = self._header_schemas

    # -- negotiated state -------------------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version."""
        return self.session.connection.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's ``serverInfo``."""
        return self.session.connection.peer_info or {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """What the server declared."""
        return self.session.connection.peer_capabilities or {}

    @property
    def instructions(self) -> str | None:
        """The server's instructions, if it sent any."""
        return self.session.connection.peer_instructions

    async def _initialize(self, protocol_version: str, timeout: float | None) -> None:
        observer = self.session.observer
        span: Any = None
        meta: dict[str, Any] | None = None
        if observer is not None:
            # Observed: initialize is a CLIENT span too, its context in params._meta.
            span, meta = observer.start_initialize()
        rid, data = self.session.connection.start_initialize(protocol_version, meta)
        if observer is None:
            self.init_result = await self._first_request(rid, "initialize", data, timeout)
            return
        try:
            self.init_result = await self._first_request(rid, "initialize", data, timeout)
        except BaseException as exc:
            observer.end_initialize(span, exc)
            raise
        observer.end_initialize(span, None)

    async def _first_request(
        self, rid: RequestId, method: str, data: bytes, timeout: float | None
    ) -> Any:
        waiter = Waiter(rid, method, Timeout(timeout), None, trio.current_time())
        self.session.tracker.add(waiter)
        await self.session.send_raw(data)
        with trio.fail_after(timeout if timeout is not None else float("inf")):
            await waiter.event.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def _connect(self, mode: str, protocol_version: str, timeout: float | None) -> None:
        """Open as ``mode`` asks: ``"auto"`` probes ``server/discover`` and speaks the
        stateless revision if the server offers it, else falls back to ``initialize``;
        ``"legacy"`` sends ``initialize`` at ``protocol_version``; a stateless version
        (``"2026-07-28"``) is used as it is, with no probe."""
        conn = self.session.connection
        if mode == "legacy":
            await self._initialize(protocol_version, timeout)
            return
        if versions.is_modern(mode):
            conn.adopt_modern(mode, meta=self._modern_meta())
            return
        if mode != "auto":
            raise ValueError(f"mode must be 'auto', 'legacy' or one of "
                             f"{', '.join(versions.MODERN_VERSIONS)}, not {mode!r}")
        probe = timeout if self.session.transport.name == "http" else (
            min(timeout, DISCOVER_TIMEOUT) if timeout is not None else DISCOVER_TIMEOUT)
        version = versions.LATEST_MODERN_VERSION
        for attempt in range(2):
            rid, data = conn.start_discover(version)
            try:
                result = await self._first_request(rid, "server/discover", data, probe)
                break
            except McpError as exc:
                supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(supported, list):
                    # Any other error means a handshake server.
                    await self._initialize(protocol_version, timeout)
                    return
                # -32022 lists what the server speaks: retry with the best stateless
                # version we share (once), else handshake if we share an older one.
                mutual = [v for v in versions.MODERN_VERSIONS if v in supported]
                if mutual and attempt == 0:
                    version = mutual[-1]
                    continue
                if any(versions.is_supported(v) for v in supported):
                    await self._initialize(protocol_version, timeout)
                    return
                raise
            except trio.TooSlowError:
                conn.abandon_request(rid)
                await self._initialize(protocol_version, timeout)
                return
        offered = result.get("supportedVersions") if isinstance(result, dict) else None
        mutual = [v for v in versions.MODERN_VERSIONS if isinstance(offered, list) and v in offered]
        if not mutual:
            await self._initialize(protocol_version, timeout)
            return
        conn.adopt_modern(mutual[-1], result, meta=self._modern_meta())
        self.discover_result = result

    def _modern_meta(self) -> dict[str, Any]:
        """What our requests say of us in the stateless revision beyond the defaults:
        the tasks extension (SEP-2663) among our capabilities, since :meth:`request`
        follows a task a server answers with to its end."""
        caps = t.tasks_extension_capabilities(self.session.connection.capabilities)
        return {META_CLIENT_CAPABILITIES: caps}

    # -- requests ---------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        on_progress: ProgressCallback | None = None,
        result_cls: Any = None,
        follow_tasks: bool = True,
    ) -> Any:
        """Send any request (also custom methods) and return its result.

        In 2026-07-28 a server may answer ``input_required``: the inputs it asks for are
        answered by this client's handlers (sampling, elicitation, roots), as its
        requests would be in a handshake session, and the request is sent again with
        them (a new id each time) until it completes. It may also answer a ``tools/call``
        with a task (the tasks extension, which this client declares): the task is
        followed to its end (polling ``tasks/get``, its questions answered by the same
        handlers through ``tasks/update``) and its result returned, as the call's would
        have been; cancelling the wait cancels the task. ``follow_tasks=False`` returns
        the task (a :class:`~mcpactor.protocol.types.DetailedTask`) instead."""
        timeout = timeout if timeout is not None else self.default_timeout
        result = await self.session.request(
            method, params, timeout=timeout, on_progress=on_progress, result_cls=result_cls)
        rounds = 0
        while isinstance(result, InputRequiredResponse):
            rounds += 1
            if rounds > self.max_input_rounds:
                raise RequestError(
                    f"{method}: the server still asked for input after "
                    f"{self.max_input_rounds} rounds", code=INTERNAL_ERROR)
            answers = {key: await self._answer_input(key, request)
                       for key, request in result.input_requests.items()}
            wire = to_wire(params) if params is not None and not isinstance(params, dict) \
                else dict(params or {})
            wire["inputResponses"] = answers
            if result.request_state is not None:
                wire["requestState"] = result.request_state
            else:
                wire.pop("requestState", None)
            result = await self.session.request(
                method, wire, timeout=timeout, on_progress=on_progress, result_cls=result_cls)
        if isinstance(result, t.DetailedTask) and result.result_type == "task":
            if method != "tools/call":
                raise RemoteProtocolError(
                    f"the server answered {method} with a task, which the tasks extension "
                    "allows only for tools/call")
            if follow_tasks:
                return await self._follow(result, result_cls, timeout)
        return result

    def _task_handle(self, task: Any, *, result_cls: Any = None, timeout: Any = None,
                     finish: Callable[[Any], Any] | None = None) -> TaskHandle[Any]:
        """A handle on a task of ours, in this session's era."""
        session = self.session
        return TaskHandle(self.request, task, result_cls=result_cls, finish=finish,
                          watchers=self._task_watchers, timeout=timeout,
                          extension=self.stateless, answer_input=self._answer_input,
                          on_end=session.forget_task_progress)

    async def _follow(self, task: t.DetailedTask, result_cls: Any, timeout: Any) -> Any:
        """A task a server answered a request with, followed to its result."""
        handle = self._task_handle(task, result_cls=result_cls, timeout=timeout)
        try:
            return await handle.result()
        except trio.Cancelled:
            # Nobody waits for the result any more: the server need not work on.
            with trio.CancelScope(shield=True, deadline=trio.current_time() + 5):
                try:
                    await handle.cancel()
                except McpError:
                    pass
            raise

    async def _answer_input(self, key: str, request: dict[str, Any]) -> dict[str, Any]:
        """One input of an ``InputRequiredResult``, answered by the client's handlers."""
        method = request.get("method")
        spec = METHODS.get(method) if isinstance(method, str) else None
        if spec is None or spec.direction != "server_to_client" or spec.kind != "request":
            raise RequestError(f"the server asked for an unknown input {method!r} ({key})",
                               code=INTERNAL_ERROR)
        raw = request.get("params") if isinstance(request.get("params"), dict) else {}
        params = from_wire(raw, spec.params_cls) if spec.params_cls is not None else raw
        assert isinstance(method, str)
        rc = RequestContext(self.session, key, method, params, raw, None, trio.CancelScope())
        answer = await self.session.handler.handle_request(rc)
        out = to_wire(answer) if not isinstance(answer, dict) else answer
        assert isinstance(out, dict)
        return out

    @property
    def stateless(self) -> bool:
        """Whether this client speaks the stateless revision (2026-07-28: no session,
        per-request ``_meta``) rather than a handshake one."""
        return self.session.connection.modern_meta is not None

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        ack_timeout: float | None = 30.0,
        backlog: int = 1024,
    ) -> AsyncIterator[Subscription]:
        """Listen for the server's change notifications (2026-07-28
        ``subscriptions/listen``): ``tools``/``prompts``/``resources`` for the list
        changes, ``resource_uris`` for ``notifications/resources/updated`` about those
        resources, ``task_ids`` for the status changes of those tasks (the tasks
        extension's ``notifications/tasks``, each the task as ``tasks/get`` shows it;
        the server agrees to the ones this client may see, and first tells each one's
        current state).

        ``async with client.listen(tools=True) as sub: async for note in sub: ...``
        The block is entered once the server acknowledged (``sub.acknowledged``: the
        filter it agreed to, which may be less than asked); leaving it cancels the
        subscription. Several may be open at once. Notifications reach the
        ``ClientHandlers`` callbacks too. In a handshake session (no
        ``subscriptions/listen`` there) the block subscribes to ``resource_uris``
        (``resources/subscribe``), attaches the session to ``task_ids`` (``tasks/get``:
        their ``notifications/tasks/status`` then come to it), and the subscription
        hears the list changes the server declared, those resources' updates and those
        tasks' status changes: the same code works in both eras. Task handles hear the
        status notifications too.
        """
        handler = self.session.handler
        if not isinstance(handler, _ClientHandler):
            raise CapabilityNotSupported("this session's handler does not route subscriptions")
        if not self.stateless:
            async with self._listen_handshake(
                    handler, tools, prompts, resources, resource_uris, backlog,
                    task_ids) as local:
                yield local
            return
        sub = Subscription(self.session, listen_filter(
            tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris,
            task_ids=task_ids), backlog)

        def register(rid: RequestId) -> None:
            handler.subscriptions[rid] = sub

        # A refused listen (or the block's own error) leaves as itself, not as a group.
        with plain_errors():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sub.run, register)
                try:
                    await sub.wait_acknowledged(ack_timeout)
                    yield sub
                finally:
                    nursery.cancel_scope.cancel()
                    if sub.id is not None:
                        handler.subscriptions.pop(sub.id, None)

    @asynccontextmanager
    async def _listen_handshake(
        self, handler: _ClientHandler, tools: bool, prompts: bool, resources: bool,
        resource_uris: Sequence[str], backlog: int, task_ids: Sequence[str] = (),
    ) -> AsyncIterator[Subscription]:
        """A listen in a handshake session: list changes come anyway (those the server
        declared), each URI is subscribed to (``resources/subscribe``) for the block,
        and the subscription hears what its filter admits."""
        caps = self.server_capabilities
        asked = listen_filter(tools=tools, prompts=prompts, resources=resources,
                              resource_uris=resource_uris)
        agreed: dict[str, Any] = {
            name: True for name, feature in (("toolsListChanged", "tools"),
                                             ("promptsListChanged", "prompts"),
                                             ("resourcesListChanged", "resources"))
            if asked.get(name) and (caps.get(feature) or {}).get("listChanged")}
        uris = list(resource_uris)
        for uri in uris:
            await self.subscribe(uri)
        if uris:
            agreed["resourceSubscriptions"] = uris
        if task_ids:
            # tasks/get attaches this session to each task: its status notifications
            # come here. Unknown (or someone else's) tasks are left out, as a 2026
            # server leaves them out of its acknowledgement.
            asked = listen_filter(tools=tools, prompts=prompts, resources=resources,
                                  resource_uris=resource_uris, task_ids=task_ids)
            known = []
            for task_id in dict.fromkeys(task_ids):
                try:
                    await self.get_task(task_id)
                except RequestError as exc:
                    if exc.code != INVALID_PARAMS:
                        raise
                    continue
                known.append(task_id)
            agreed["taskIds"] = known
        local = Subscription(self.session, asked, backlog)
        local.acknowledged = agreed
        handler.local_subscriptions.append(local)
        try:
            yield local
        finally:
            handler.local_subscriptions.remove(local)
            local.close()
            with trio.CancelScope(shield=True):
                for uri in uris:
                    if not self.session.closed.is_set():
                        await self.unsubscribe(uri)

    async def ping(self, *, timeout: Timeout | float | None = None) -> None:
        """Check that the server answers (a handshake-era request: in 2026-07-28, which
        removed it, use :meth:`discover`)."""
        await self.request("ping", None, timeout=timeout)

    async def discover(self, *, timeout: Timeout | float | None = None) -> dict[str, Any]:
        """``server/discover`` (2026-07-28): the server's versions, capabilities and
        identity; also the way to check that it answers. A handshake session has its
        answers from ``initialize`` (:attr:`server_capabilities`...) and :meth:`ping`."""
        if not self.stateless:
            raise LocalProtocolError(
                f"server/discover is a 2026-07-28 request and this client speaks "
                f"{self.protocol_version} (connect with mode=\"auto\" or "
                f"mode=\"2026-07-28\"); use ping() to check that the server answers")
        result: dict[str, Any] = await self.request("server/discover", None, timeout=timeout)
        return result

    async def list_tools(self, cursor: str | None = None, **kw: Any) -> t.ListToolsResult:
        """One page of tools (their output schemas are kept to check results with)."""
        result: t.ListToolsResult = await self.request("tools/list", _page(cursor), **kw)
        headers = self._mirrors_headers()
        if headers is not None:
            result = _without_invalid_headers(result)
            for tool in result.tools:
                headers[tool.name] = tool.input_schema
        schemas = self._output_schemas
        if schemas is not None:
            for tool in result.tools:
                schemas[tool.name] = tool.output_schema
        return result

    def _mirrors_headers(self) -> dict[str, Any] | None:
        """The schemas for ``Mcp-Param-*`` headers when this client mirrors tool
        arguments into them: 2026-07-28 over Streamable HTTP; else None."""
        if self.session.connection.modern_meta is None:
            return None
        return self._header_schemas

    async def list_all_tools(self, **kw: Any) -> list[t.Tool]:
        """Every tool, following pagination."""
        return [tool async for page in self._pages(self.list_tools, kw) for tool in page.tools]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: Timeout | float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
        validate: bool = True,
        result_type: Any = None,
    ) -> ToolResult[Any]:
        """Call a tool. Execution failures come back as ``is_error`` results; protocol
        errors (unknown tool, malformed call) raise :class:`McpError`.

        When the tool was listed (:meth:`list_tools`) with an ``outputSchema``, its
        result must carry ``structuredContent`` that matches it, as the spec asks
        clients to check: otherwise :class:`InvalidResult` (``data``: the failing path
        and the reason). ``validate=False`` takes the result as it comes.

        The result is a :class:`~mcpactor.client.ToolResult`: the
        :class:`~mcpactor.protocol.types.CallToolResult` plus ``data``, the structured
        content as ``result_type`` (a pydantic model, dataclass, attrs class,
        TypedDict, or any annotation a tool could return: ``int``, ``list[Model]``...,
        read from ``{"result": ...}`` for non-objects) when given, else the
        ``structuredContent`` dict; None for an ``is_error`` result. Content that does
        not fit ``result_type`` raises :class:`InvalidResult`.
        """
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        try:
            result: ToolResult[Any] = await self.request(
                "tools/call", params, timeout=timeout, on_progress=on_progress,
                result_cls=ToolResult[Any],
            )
        except McpError as exc:
            # SEP-2243: a server that wants Mcp-Param-* headers we did not send (its
            # inputSchema changed, or was never listed): list the tools, then once more.
            if exc.code != HEADER_MISMATCH or self._mirrors_headers() is None:
                raise
            await self.list_all_tools(timeout=timeout)
            result = await self.request(
                "tools/call", params, timeout=timeout, on_progress=on_progress,
                result_cls=ToolResult[Any],
            )
        return self._checked_tool_result(name, result, validate, result_type)

    def _checked_tool_result(self, name: str, result: ToolResult[Any], validate: bool,
                             result_type: Any) -> ToolResult[Any]:
        """A tool's result checked against its listed ``outputSchema`` and read as
        ``result_type`` (a plain call's and a task's alike)."""
        schemas = self._output_schemas
        schema = schemas.get(name) if validate and schemas is not None else None
        if schema is not None and not result.is_error:
            structured = result.structured_content
            if structured is None:
                raise InvalidResult(
                    f"tool {name!r} declares an outputSchema but its result has no "
                    "structuredContent", data={"path": "$", "reason": "no structuredContent"})
            error = first_error(structured, schema)
            if error is not None:
                raise InvalidResult(
                    f"tool {name!r} returned structuredContent that does not match its "
                    f"outputSchema: {error}", data={"path": error.path, "reason": error.reason})
        return typed_result(name, result, result_type)

    # -- tasks (2025-11-25, and the 2026-07-28 extension) --------------------------------------------------------------

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        ttl: float | None = None,
        timeout: Timeout | float | None = None,
        meta: dict[str, Any] | None = None,
        validate: bool = True,
        result_type: Any = None,
        on_progress: ProgressCallback | None = None,
    ) -> TaskHandle[ToolResult[Any]]:
        """Call a tool as a task: returns at once with a
        :class:`~mcpactor.tasks.TaskHandle` (``status``, ``async for task in
        handle.statuses()``, ``await handle.result()``, ``await handle.cancel()``)
        whose result is what :meth:`call_tool` returns. See ``docs/tasks.md``.

        2025-11-25: ``ttl`` is the seconds the server should keep the task (it may
        grant less); the server must declare ``tasks.requests.tools.call`` (else
        :class:`~mcpactor.CapabilityNotSupported`) and the tool must allow it (a tool
        whose ``execution.taskSupport`` is ``forbidden`` answers -32601);
        ``on_progress`` hears the task's progress until it ends. 2026-07-28 (the tasks
        extension): the server must declare the extension, and decides: the handle may
        come back settled (the server answered at once; ``task_id`` empty); ``ttl`` and
        ``on_progress`` do not apply (the extension has neither)."""
        return await client_tasks.call_tool_task(
            self, name, arguments, ttl=ttl, timeout=timeout, meta=meta, validate=validate,
            result_type=result_type, on_progress=on_progress)

    async def task(
        self, task_id: str, *, tool: str | None = None, result_cls: Any = None,
        result_type: Any = None, timeout: Timeout | float | None = None,
    ) -> TaskHandle[Any]:
        """A handle for a task this client knows the id of (say, from before it
        reconnected); ``tool``: it is a call of that tool. An unknown id: -32602."""
        return await client_tasks.attach(self, task_id, tool=tool, result_cls=result_cls,
                                         result_type=result_type, timeout=timeout)

    async def get_task(self, task_id: str, **kw: Any) -> t.Task | t.DetailedTask:
        """A task's state (``tasks/get``): a :class:`~mcpactor.protocol.types.Task`,
        or in 2026-07-28 a :class:`~mcpactor.protocol.types.DetailedTask` (with the
        result, error or questions its status carries)."""
        return await self.request("tasks/get", {"taskId": task_id}, **kw)

    async def list_tasks(self, cursor: str | None = None, **kw: Any) -> t.ListTasksResult:
        """One page of this client's tasks (``tasks/list``; 2025-11-25 only: the tasks
        extension of 2026-07-28 has no list)."""
        return await self.request("tasks/list", _page(cursor), **kw)

    async def cancel_task(self, task_id: str, **kw: Any) -> t.Task | None:
        """Cancel a task (``tasks/cancel``); its state afterwards (2025-11-25), or None
        (2026-07-28: the server only acknowledges; ask ``get_task`` for the state)."""
        result = await self.request("tasks/cancel", {"taskId": task_id}, **kw)
        return result if isinstance(result, t.Task) else None

    async def list_resources(self, cursor: str | None = None, **kw: Any) -> t.ListResourcesResult:
        """One page of resources."""
        return await self.request("resources/list", _page(cursor), **kw)

    async def list_all_resources(self, **kw: Any) -> list[t.Resource]:
        """Every resource, following pagination."""
        return [r async for page in self._pages(self.list_resources, kw) for r in page.resources]

    async def list_resource_templates(
        self, cursor: str | None = None, **kw: Any
    ) -> t.ListResourceTemplatesResult:
        """One page of resource templates."""
        return await self.request("resources/templates/list", _page(cursor), **kw)

    async def list_all_resource_templates(self, **kw: Any) -> list[t.ResourceTemplate]:
        """Every resource template, following pagination."""
        return [rt async for page in self._pages(self.list_resource_templates, kw)
                for rt in page.resource_templates]

    async def read_resource(self, uri: str, **kw: Any) -> t.ReadResourceResult:
        """Read a resource. A missing one raises :class:`~mcpactor.RequestError` with
        ``data.uri``: code -32002 from servers on revisions up to 2025-11-25, -32602 from
        2026-07-28 (SEP-2164), and either from servers that mix them up."""
        return await self.request("resources/read", {"uri": uri}, **kw)

    async def resource_metadata(self, uri: str, **kw: Any) -> t.ReadResourceMetadataResult:
        """A resource's metadata without its contents (SEP-2093)."""
        return await self.request("resources/metadata", {"uri": uri}, **kw)

    async def subscribe(self, uri: str, **kw: Any) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri``."""
        await self.request("resources/subscribe", {"uri": uri}, **kw)

    async def unsubscribe(self, uri: str, **kw: Any) -> None:
        """Stop updates about ``uri``."""
        await self.request("resources/unsubscribe", {"uri": uri}, **kw)

    async def list_skills(self, cursor: str | None = None, **kw: Any) -> t.ListSkillsResult:
        """One page of the server's Agent Skills (the skills extension, SEP-2640): entries
        of ``uri``, ``frontmatter`` and ``resources`` (read the files with
        :meth:`read_resource`, and check each against its ``digest``)."""
        return await self.request("skills/list", _page(cursor), **kw)

    async def get_skill(self, uri: str, **kw: Any) -> t.GetSkillResult:
        """One skill's entry, by the URI of its ``SKILL.md``."""
        return await self.request("skills/get", {"uri": uri}, **kw)

    async def read_directory(self, uri: str, cursor: str | None = None,
                             **kw: Any) -> t.ReadDirectoryResult:
        """A skill directory's children (``resources/directory/read``)."""
        params: dict[str, Any] = {"uri": uri}
        if cursor is not None:
            params["cursor"] = cursor
        return await self.request("resources/directory/read", params, **kw)

    async def list_prompts(self, cursor: str | None = None, **kw: Any) -> t.ListPromptsResult:
        """One page of prompts."""
        return await self.request("prompts/list", _page(cursor), **kw)

    async def list_all_prompts(self, **kw: Any) -> list[t.Prompt]:
        """Every prompt, following pagination."""
        return [p async for page in self._pages(self.list_prompts, kw) for p in page.prompts]

    async def _pages(self, lister: Callable[..., Awaitable[Any]],
                     kw: dict[str, Any]) -> AsyncIterator[Any]:
        # Pages until one has no next cursor; a server that hands back a cursor it gave
        # before would loop forever, so that is an error.
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await lister(cursor, **kw)
            yield page
            cursor = page.next_cursor
            if not cursor:
                return
            if cursor in seen:
                raise InvalidResult(f"the server repeated the page cursor {cursor!r}",
                                    data={"path": "$.nextCursor", "reason": "repeated"})
            seen.add(cursor)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, **kw: Any
    ) -> t.GetPromptResult:
        """Render a prompt."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("prompts/get", params, **kw)

    async def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference | dict[str, Any],
        argument: dict[str, str] | t.CompletionArgument,
        context: dict[str, Any] | None = None,
        **kw: Any,
    ) -> t.CompleteResult:
        """Ask for completions of one argument."""
        params: dict[str, Any] = {
            "ref": ref if isinstance(ref, dict) else to_wire(ref),
            "argument": argument if isinstance(argument, dict) else to_wire(argument),
        }
        if context is not None:
            params["context"] = context
        return await self.request("completion/complete", params, **kw)

    async def set_logging_level(self, level: str, **kw: Any) -> None:
        """The minimum level of log messages the server should send: ``logging/setLevel``
        in a handshake session; in 2026-07-28, which removed it, the level every
        request carries from now on in its ``_meta`` (without one a 2026-07-28 server
        sends no log messages at all)."""
        if self.stateless:
            self.session.connection.set_log_level(level)
            return
        await self.request("logging/setLevel", {"level": level}, **kw)

    async def send_roots_list_changed(self) -> None:
        """Tell the server the roots changed. In 2026-07-28 there is nothing to tell (a
        server asks for the roots in each request that needs them), and nothing is
        sent."""
        if self.stateless:
            return
        await self.session.notify("notifications/roots/list_changed")

    async def aclose(self) -> None:
        """End the session."""
        self.session.close("client closed")
        await self.session.closed.wait()


def _without_invalid_headers(result: t.ListToolsResult) -> t.ListToolsResult:
    """SEP-2243: a client over Streamable HTTP leaves out every tool whose
    ``x-mcp-header`` annotations break the rules (one bad tool must not hide the rest)."""
    kept = []
    for tool in result.tools:
        reason = invalid_header_annotation(tool.input_schema)
        if reason is None:
            kept.append(tool)
        else:
            log.warning("leaving out the tool %r: %s", tool.name, reason)
    return result if len(kept) == len(result.tools) else attrs.evolve(result, tools=kept)


def _page(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def timeout_to_json(timeout: Timeout | float | None) -> Any:
    """A client's default timeout as a trace header records it (see
    :func:`timeout_from_json`)."""
    if isinstance(timeout, Timeout):
        return attrs.asdict(timeout)
    return timeout


def timeout_from_json(value: Any) -> Timeout | float | None:
    """The timeout :func:`timeout_to_json` recorded."""
    if isinstance(value, dict):
        return Timeout(**{k: v for k, v in value.items()
                          if k in ("seconds", "reset_on_progress", "maximum")})
    return value if isinstance(value, int | float) else None


def _one_tracer(trace: object, tracer: object) -> None:
    if trace is not None and tracer is not None:
        raise ValueError("pass trace= (a file to record to) or tracer=, not both")


@asynccontextmanager
async def connect_transport(
    transport: Transport,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str = versions.LATEST_VERSION,
    timeout: Timeout | float | None = None,
    init_timeout: float | None = 30.0,
    tracer: Tracer | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen
    trace: str | os.PathLike[str] | None = None,
    entry_point: str | None = None,
    session_id: str | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """Open a client session over any transport and initialize it.

    ``mode``: ``"auto"`` (default) asks ``server/discover`` first and speaks 2026-07-28
    (stateless, per-request ``_meta``) when the server offers it, else falls back to the
    ``initialize`` handshake at ``protocol_version``; ``"legacy"`` always handshakes;
    ``"2026-07-28"`` pins the stateless revision with no probe.

    ``trace`` records the session to that JSONL file (see ``docs/trace-format.md``);
    ``entry_point`` (``module:attr`` or ``path/file.py:attr``) names the client code the
    session runs, an ``async def main(client)`` or a
    :class:`~mcpactor.client.script.ClientScript`, so that ``mcpactor replay TRACE`` can
    run it again against the recorded server. ``tracer`` takes any other
    :class:`~mcpactor.tracing.Tracer` instead. ``session_id`` fixes the session's id
    (default: a fresh one).
    """
    recording: AbstractAsyncContextManager[Any] = nullcontext()
    if trace is not None:
        _one_tracer(trace, tracer)
        from mcpactor.tracing.recorder import Recorder, TraceHeader

        recorder = Recorder(TraceHeader(
            role="client", transport=transport.name, entry_point=entry_point,
            client_options={"timeout": timeout_to_json(timeout), "init_timeout": init_timeout,
                            "mode": mode}),
            trace)
        recording = recorder.recording()
        tracer = recorder
    handlers = handlers or ClientHandlers()
    conn = Connection(
        Role.CLIENT,
        info=client_info or {"name": "mcpactor-client", "version": __version__},
        capabilities=handlers.capabilities(),
    )
    session = Session(transport, conn, _ClientHandler(handlers), tracer=tracer, limits=limits,
                      session_id=session_id)
    with plain_errors():
        async with recording, _client_code(session.id, tracer), \
                trio.open_nursery() as nursery:
            await nursery.start(session.run)
            client = Client(session, default_timeout=timeout)
            try:
                await client._connect(mode, protocol_version, init_timeout)
                yield client
            except Exception as exc:
                # The client code's own failure is part of the session's story: a replay
                # of the trace must fail the same way to be faithful.
                session._emit("client", "client_failed", {"error": repr(exc)})
                raise
            finally:
                session.close("client closed")
                with trio.CancelScope(shield=True):
                    await session.closed.wait()


@asynccontextmanager
async def _client_code(session_id: str, tracer: Tracer | None) -> AsyncIterator[None]:
    """While a client session is recorded, the task running the client code (the caller
    of ``connect_*``) is followed too, from its next step on, as the root of the tasks it
    starts: how the client's own tasks interleave is part of the story."""
    if tracer is None or current_node() is not None:
        yield
        return
    token = follow_current(f"{session_id}/client", tracer)
    try:
        # Followed from the next step on (this one began before it was named).
        await trio.lowlevel.checkpoint()
        yield
    finally:
        if token is not None:
            TRACK.reset(token)


@asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str = versions.LATEST_VERSION,
    timeout: Timeout | float | None = None,
    init_timeout: float | None = 30.0,
    tracer: Tracer | None = None,
    shutdown_timeout: float = 2.0,
    limits: Limits = Limits(),  # noqa: B008 - frozen
    trace: str | os.PathLike[str] | None = None,
    entry_point: str | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """Spawn ``command`` as an MCP server over stdio and connect to it (``mode``: the
    era, see :func:`connect_transport`).

    On exit the server is shut down as the spec says: stdin closed, then SIGTERM, then
    SIGKILL if it does not exit within ``shutdown_timeout`` seconds each. ``trace`` and
    ``entry_point`` record the session for replay (see :func:`connect_transport`).
    """
    from mcpactor.transports.stdio import StdioClientTransport

    _one_tracer(trace, tracer)
    transport = await StdioClientTransport.spawn(
        command, env=env, cwd=cwd, shutdown_timeout=shutdown_timeout
    )
    initialized = False
    try:
        async with connect_transport(
            transport,
            handlers=handlers,
            client_info=client_info,
            protocol_version=protocol_version,
            timeout=timeout,
            init_timeout=init_timeout,
            tracer=tracer,
            limits=limits,
            trace=trace,
            entry_point=entry_point,
            mode=mode,
        ) as client:
            initialized = True
            yield client
    except ConnectionClosed as exc:
        if initialized:
            raise
        # The server ended its output before answering initialize: most often it failed
        # to start. Its exit status says more than "end of input".
        with trio.move_on_after(1.0):
            await transport.process.wait()
        status = transport.process.returncode
        how = "is still running" if status is None else f"exited with status {status}"
        raise ConnectionClosed(
            f"the server {' '.join(command)!r} closed its output before answering "
            f"initialize and {how} (its stderr may say why)"
        ) from exc
    finally:
        await transport.aclose()
