"""``Context``: what a server handler can do while it answers a request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import (
    CapabilityNotSupported,
    InvalidParams,
    InvalidResult,
    MissingClientCapability,
)
from mcpactor.protocol.json_schema import first_error
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.methods import METHODS
from mcpactor.protocol.mrtr import INPUT_METHODS
from mcpactor.protocol.versions import V2025_11_25, at_least
from mcpactor.server.elicitation import ElicitationResult, elicitation_form
from mcpactor.server.rounds import Rounds, bad_answer, rounds_of
from mcpactor.session.context import RequestContext
from mcpactor.session.session import Session
from mcpactor.session.state import SessionAuth
from mcpactor.session.tracker import Timeout
from mcpactor.tasks.context import running_task_of

if TYPE_CHECKING:
    from mcpactor.auth.verifier import AccessToken
    from mcpactor.server.app import Server

T = TypeVar("T")
if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVarWithDefault

    #: The lifespan's state (what ``Server(lifespan=...)`` yields): ``Context[AppState]``.
    LifespanT = _TypeVarWithDefault("LifespanT", default=Any)
else:
    LifespanT = TypeVar("LifespanT")

#: Severity order of MCP log levels (RFC 5424 names), least severe first.
LOG_LEVELS: tuple[str, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
)
_LEVEL_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}


@attrs.define
class ServerSessionState:
    """Per-session server state: the client's log level and resource subscriptions."""

    log_level: str | None = None
    subscriptions: set[str] = attrs.Factory(set)

    def wants_log(self, level: str) -> bool:
        """Whether a message at ``level`` passes the client's minimum level."""
        if self.log_level is None:
            return True
        return _LEVEL_RANK.get(level, 0) >= _LEVEL_RANK.get(self.log_level, 0)


def session_state(session: Session) -> ServerSessionState:
    """The server state attached to ``session``."""
    return session.state.setdefault(ServerSessionState, ServerSessionState)


class Context(Generic[LifespanT]):
    """Passed to any handler that declares a parameter annotated ``Context`` (or
    ``Context[AppState]``, which types :attr:`lifespan`).

    It reports progress, logs to the client, asks the client for things (sampling,
    elicitation, roots), tells whether the request was cancelled, and holds the
    server's lifespan state.
    """

    __slots__ = ("_rc", "server")

    def __init__(self, rc: RequestContext, server: Server[Any]) -> None:
        self._rc = rc
        self.server = server

    @property
    def lifespan(self) -> LifespanT:
        """What the server's lifespan yielded (``Server(lifespan=...)``): a database
        pool, an HTTP client...; None for a server without one. In a mounted server's
        handler, that server's own."""
        state: LifespanT = self.server.lifespan_state
        return state

    @property
    def lifespan_context(self) -> LifespanT:
        """The same as :attr:`lifespan` (the name FastMCP and the SDK use)."""
        return self.lifespan

    @property
    def method(self) -> str:
        """The method of the request being answered (``tools/call``, ...)."""
        return self._rc.method

    @property
    def session_id(self) -> str:
        """The session's id (the ``Mcp-Session-Id`` over Streamable HTTP)."""
        return self._rc.session.id

    @property
    def request(self) -> RequestContext:
        """The session-level request (its typed ``params``, ``raw_params``, scope)."""
        return self._rc

    @property
    def request_id(self) -> RequestId:
        """The JSON-RPC id of the request being answered."""
        return self._rc.id

    @property
    def session(self) -> Session:
        """The session this request arrived on."""
        return self._rc.session

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``_meta``."""
        return self._rc.meta

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this request."""
        return self._rc.cancelled

    @property
    def protocol_version(self) -> str | None:
        """The protocol version of this request: the session's negotiated one, or the
        one a stateless (2026-07-28) request names in its ``_meta``."""
        return self._rc.protocol_version

    @property
    def client_info(self) -> dict[str, Any]:
        """The client's ``clientInfo`` (from initialize, or this request's ``_meta``)."""
        modern = self._rc.modern
        if modern is not None:
            return modern.client_info or {}
        return self._rc.session.connection.peer_info or {}

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared (at initialize, or in this request's
        ``_meta``)."""
        return self._rc.peer_capabilities

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (``"sampling"``,
        ``"elicitation"``, ``"roots"``)."""
        return capability in self._rc.peer_capabilities

    @property
    def auth(self) -> AccessToken | None:
        """[auth] The validated OAuth token (``mcpactor.auth.AccessToken``: ``subject``,
        ``client_id``, ``scopes``, ``claims``) of the HTTP request that carried this
        request (the session's latest one if unknown); None when the server runs
        without ``auth=`` or over another transport."""
        state = self._rc.session.state.get(SessionAuth)
        return state.token_for(self._rc.id) if state is not None else None

    # -- progress and logging ----------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress if the client asked for it (sent a progress token)."""
        return await self._rc.report_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send ``notifications/message`` if the client's level lets it through."""
        if level not in _LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        session = self._rc.session
        modern = self._rc.modern
        if modern is not None:
            # 2026-07-28: logs only for a request that set a level in its _meta.
            if modern.log_level is None or _LEVEL_RANK[level] < _LEVEL_RANK[modern.log_level]:
                return False
        elif not session_state(session).wants_log(level):
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        # Through the request context: in a task it goes where the task's messages go.
        await self._rc.notify("notifications/message", params)
        return True

    async def debug(self, data: Any, logger: str | None = None) -> bool:
        """Log at ``debug``."""
        return await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> bool:
        """Log at ``info``."""
        return await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> bool:
        """Log at ``warning``."""
        return await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> bool:
        """Log at ``error``."""
        return await self.log("error", data, logger)

    # -- requests to the client ----------------------------------------------------------

    def _require(self, capability: str, what: str) -> None:
        if capability not in self.client_capabilities:
            if self._rc.modern is not None:
                raise MissingClientCapability(capability, what)
            raise CapabilityNotSupported(
                f"{what} needs the client's {capability!r} capability, which it did not declare"
            )

    async def begin_task(self) -> None:
        """Where the task of a tool registered with ``begins_task=True`` begins (see
        ``docs/tasks.md``): when a 2026-07-28 call becomes a task, what the tool did
        before ran in the request (its questions were input rounds), the request is
        answered with the task here, and the tool runs again in the task, with the same
        answers, past this point. Anywhere else (a plain call, a 2025-11-25 task, the
        task's own run) it returns at once."""
        task = running_task_of(self._rc)
        if task is not None:
            task.begun = True
            return
        rounds = self._rc.state
        if isinstance(rounds, Rounds) and rounds.begins_task:
            from mcpactor.server.tasks import BeginTask

            raise BeginTask()

    def _parked_task(self) -> Any:
        """The task this request runs as, when it is the 2026-07-28 extension's (its
        questions wait for ``tasks/update``); else None."""
        task = running_task_of(self._rc)
        return task if task is not None and task.parked else None

    def _earlier_answer(self, task: Any, key: str) -> dict[str, Any] | None:
        """In a task's run of a ``begins_task`` tool, before ``begin_task``: the answer
        the request's input rounds gathered for ``key``."""
        rounds = self._rc.state
        if task.begun or not isinstance(rounds, Rounds):
            return None
        return rounds.take(key)

    async def _input(
        self, key: str | None, kind: str, method: str, params: dict[str, Any] | None,
        result_cls: Any, timeout: Timeout | float | None,
    ) -> Any:
        """One input from the client: a request in a handshake session (and a 2025-11-25
        task); in the stateless era the answer the retry brought, or the end of this run
        asking for it; in an extension task a question waiting for ``tasks/update``."""
        rc = self._rc
        task = self._parked_task()
        if task is not None:
            rounds = rc.state
            wanted = key or (rounds.auto_key(kind) if isinstance(rounds, Rounds) else kind)
            answer = self._earlier_answer(task, wanted)
            if answer is None:
                answer = (await task.ask_parked({wanted: (method, params)}))[wanted]
            try:
                return from_wire(answer, result_cls)
            except InvalidParams as exc:
                raise bad_answer(wanted, exc) from None
        if rc.modern is None:
            return await rc.request(method, params, timeout=timeout)
        rounds = rounds_of(rc, method)
        if key is None:
            key = rounds.auto_key(kind)
        answer = rounds.take(key)
        if answer is None:
            raise rounds.need({key: {"method": method, "params": params or {}}})
        try:
            return from_wire(answer, result_cls)
        except InvalidParams as exc:
            raise bad_answer(key, exc) from None

    async def ask(
        self, requests: dict[str, tuple[str, dict[str, Any] | None]],
        *, timeout: Timeout | float | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Several inputs at once: ``{key: (method, params)}`` with methods among
        ``elicitation/create``, ``sampling/createMessage``, ``roots/list``; returns
        ``{key: result}`` (wire form). In the stateless era they go to the client in one
        ``InputRequiredResult``; in a session, one request after another."""
        for key, (method, _) in requests.items():
            capability = INPUT_METHODS.get(method)
            if capability is None:
                raise ValueError(f"{key}: {method!r} is not an input request; use one of "
                                 f"{', '.join(INPUT_METHODS)}")
            self._require(capability, method)
        rc = self._rc
        out: dict[str, dict[str, Any]] = {}
        task = self._parked_task()
        if task is not None:
            waiting: dict[str, tuple[str, dict[str, Any] | None]] = {}
            for key, (method, params) in requests.items():
                answer = self._earlier_answer(task, key)
                if answer is None:
                    waiting[key] = (method, params)
                else:
                    out[key] = answer
            if waiting:
                out.update(await task.ask_parked(waiting))
            return {key: out[key] for key in requests}
        if rc.modern is None:
            for key, (method, params) in requests.items():
                result = await rc.request(method, params, timeout=timeout)
                out[key] = to_wire(result)
            return out
        rounds = rounds_of(rc, "input")
        missing: dict[str, dict[str, Any]] = {}
        for key, (method, params) in requests.items():
            answer = rounds.take(key)
            if answer is None:
                missing[key] = {"method": method, "params": params or {}}
            else:
                out[key] = answer
        if missing:
            raise rounds.need(missing)
        return out

    async def relay(
        self, method: str, params: Any = None, *, timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> Any:
        """Ask the client one input request as another server asked it of us (what a
        proxy does with the sampling, elicitation and roots requests of the server
        behind it): ``method`` is ``elicitation/create``, ``sampling/createMessage`` or
        ``roots/list``, ``params`` its params (typed or wire form), passed on as they
        are. Returns the client's typed result. Like :meth:`elicit`, a request to the
        client in a handshake session, an input round in 2026-07-28."""
        capability = INPUT_METHODS.get(method)
        if capability is None:
            raise ValueError(f"{method!r} is not an input request; use one of "
                             f"{', '.join(INPUT_METHODS)}")
        self._require(capability, method)
        spec = METHODS[method]
        wire = params if params is None or isinstance(params, dict) else to_wire(params)
        return await self._input(key, capability, method, wire, spec.result_cls, timeout)

    async def sample(
        self,
        messages: str | list[t.SamplingMessage] | list[dict[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: t.ModelPreferences | dict[str, Any] | None = None,
        include_context: str | None = None,
        metadata: dict[str, Any] | None = None,
        tools: list[t.Tool] | None = None,
        tool_choice: t.ToolChoice | None = None,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> t.CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``).

        ``key``: the input's name in a 2026-07-28 ``InputRequiredResult`` (default: one
        derived from the call order)."""
        self._require("sampling", "sampling")
        if isinstance(messages, str):
            messages = [t.SamplingMessage(role="user", content=t.TextContent(text=messages))]
        params: dict[str, Any] = {
            "messages": [m if isinstance(m, dict) else to_wire(m) for m in messages],
            "maxTokens": max_tokens,
        }
        for key, value in (
            ("systemPrompt", system_prompt),
            ("temperature", temperature),
            ("stopSequences", stop_sequences),
            ("includeContext", include_context),
            ("metadata", metadata),
        ):
            if value is not None:
                params[key] = value
        if model_preferences is not None:
            params["modelPreferences"] = (
                model_preferences if isinstance(model_preferences, dict) else to_wire(model_preferences)
            )
        if tools is not None:
            params["tools"] = [to_wire(x) for x in tools]
        if tool_choice is not None:
            params["toolChoice"] = to_wire(tool_choice)
        result = await self._input(key, "sampling", "sampling/createMessage", params,
                                   t.CreateMessageResult, timeout)
        assert isinstance(result, t.CreateMessageResult)
        return result

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any],
        *,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> ElicitationResult[dict[str, Any]]: ...

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: type[T],
        *,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> ElicitationResult[T]: ...

    @overload
    async def elicit(
        self,
        message: str,
        *,
        response_type: type[T],
        timeout: Timeout | float | None = None,
    ) -> ElicitationResult[T]: ...

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: Any,
        *,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> ElicitationResult[Any]: ...

    async def elicit(
        self,
        message: str,
        requested_schema: Any = None,
        *,
        response_type: Any = None,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> ElicitationResult[Any]:
        """Ask the user for structured input (form-mode ``elicitation/create``).

        ``requested_schema`` (or ``response_type=``, FastMCP's name for it) is a type, or
        a JSON schema written by hand. A type (a
        pydantic model, dataclass, attrs class or TypedDict whose fields are str, int,
        float, bool, a ``Literal``/``Enum`` of strings or a list of those; or one such
        value alone) gives its form schema and an :class:`ElicitationResult` whose
        ``data`` is an instance of it once accepted (``action`` says whether). A dict
        is sent as it is, and ``data`` is then the accepted content, a dict (``content``
        too, in either case: the form content as the client sent it). A type no form
        can hold is a TypeError before anything is sent.

        Accepted content that does not match the schema (or does not convert to the
        type) raises :class:`~mcpactor.protocol.errors.InvalidResult` (in a tool: an
        ``isError`` result, unless the tool catches it).

        In 2026-07-28 the question goes out in an ``InputRequiredResult`` under ``key``
        (default: derived from the call order) and the handler runs again with the
        answer when the client retries.
        """
        if response_type is not None:
            if requested_schema is not None:
                raise TypeError("elicit() takes the schema once: requested_schema or "
                                "response_type, not both")
            requested_schema = response_type
        if requested_schema is None:
            raise TypeError("elicit() needs what to ask for: a type (elicit(message, "
                            "Model)) or a JSON schema")
        form = None
        if not isinstance(requested_schema, dict):
            form = elicitation_form(requested_schema)
            requested_schema = form.schema
        self._require("elicitation", "elicitation")
        params: dict[str, Any] = {"message": message, "requestedSchema": requested_schema}
        version = self.protocol_version
        if version is not None and at_least(version, V2025_11_25):
            params["mode"] = "form"
        result = await self._input(key, "elicitation", "elicitation/create", params,
                                   t.ElicitResult, timeout)
        assert isinstance(result, t.ElicitResult)
        if result.action == "accept" and result.content is not None:
            # Both sides SHOULD check the content against the schema: a handler can then
            # trust the shape of what it asked for.
            error = first_error(to_wire(result.content), requested_schema)
            if error is not None:
                raise InvalidResult(
                    f"the client's elicitation content does not match the requested schema: "
                    f"{error}", data={"path": error.path, "reason": error.reason})
        content = to_wire(result.content) if result.content is not None else None
        if form is not None:
            return form.result(result.action, content)
        # A schema written by hand: the content is the answer as it is.
        return ElicitationResult(action=result.action,
                                 data=content if result.action == "accept" else None,
                                 content=content)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str,
        *,
        timeout: Timeout | float | None = None,
        key: str | None = None,
    ) -> t.ElicitResult:
        """Send the user to a URL (URL-mode elicitation, 2025-11-25; an input round in
        2026-07-28, ``key`` as in :meth:`elicit`)."""
        self._require("elicitation", "URL elicitation")
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        result = await self._input(key, "elicitation", "elicitation/create", params,
                                   t.ElicitResult, timeout)
        assert isinstance(result, t.ElicitResult)
        return result

    async def list_roots(
        self, *, timeout: Timeout | float | None = None, key: str | None = None
    ) -> list[t.Root]:
        """The client's roots (``roots/list``; an input round in 2026-07-28)."""
        self._require("roots", "roots/list")
        result = await self._input(key, "roots", "roots/list", None, t.ListRootsResult, timeout)
        assert isinstance(result, t.ListRootsResult)
        return list(result.roots)

    async def close_sse_stream(self) -> bool:
        """Streamable HTTP: end this request's SSE stream now, so the client reconnects
        and resumes it (SSE polling, 2025-11-25). False on transports without streams."""
        closer = getattr(self._rc.session.transport, "close_request_stream", None)
        if closer is None:
            return False
        await closer(self._rc.id)
        return True

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every subscribed session that ``uri`` changed."""
        await self.server.notify_resource_updated(uri)

    async def read_resource(self, uri: str) -> list[t.TextResourceContents | t.BlobResourceContents]:
        """Read one of this server's resources (its own, a template's, or a mounted
        server's) as a client would, without going through middleware; a missing one
        raises :class:`~mcpactor.ResourceNotFound`."""
        from mcpactor.server.handler import ServerHandler

        rc = self._rc.derived("resources/read", t.ReadResourceRequestParams(uri=uri))
        result = await ServerHandler(self.server).read_resource(rc)
        return list(result.contents)
