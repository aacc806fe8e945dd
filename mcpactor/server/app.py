"""``Server``: the registry users decorate, and the entry points that serve it."""

from __future__ import annotations

import inspect
import logging
import signal
import sys
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableSet,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, overload

import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import CapabilityNotSupported
from mcpactor.protocol.lifecycle import Role, State
from mcpactor.protocol.modern import CachePolicy
from mcpactor.protocol.mrtr import RequestStateCodec, SpentStates
from mcpactor.server.content import _CONTENT_TYPES
from mcpactor.server.context import Context, session_state
from mcpactor.server.listen import ListenHub
from mcpactor.server.registry import PromptEntry, ResourceEntry, TemplateEntry, ToolEntry
from mcpactor.server.schema import build_signature, validate_tool_name
from mcpactor.server.schema.prompts import build_prompt_signature
from mcpactor.server.uri_template import UriTemplate
from mcpactor.session.groups import plain_errors
from mcpactor.session.session import Limits, Session
from mcpactor.tracing.tracer import Tracer
from mcpactor.transports.base import Transport

if TYPE_CHECKING:
    from mcpactor.tracing.recorder import Recorder, Rotation

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("mcpactor.server")

#: What ``Server(capabilities=[...])`` declares for each name it takes.
_NAMED_CAPABILITIES: dict[str, dict[str, Any]] = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
}

#: What a list-changed notification needs the session to have declared.
_NOTIFICATION_FEATURE = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
    "notifications/resources/updated": "resources",
}

_UNSTRUCTURED = (*_CONTENT_TYPES, t.CallToolResult)


class SessionSet(MutableSet["Session"]):
    """A set of sessions that iterates in insertion order (a plain set iterates in the
    order of memory addresses, which differ from run to run)."""

    def __init__(self) -> None:
        self._items: dict[Session, None] = {}

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Session]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, value: Session) -> None:
        """Add ``value`` (at the end, if new)."""
        self._items[value] = None

    def discard(self, value: Session) -> None:
        """Remove ``value`` if present."""
        self._items.pop(value, None)


def _after(signalled: int | None) -> None:
    # Ctrl-C still ends the caller's program as Ctrl-C does, once the sessions closed.
    if signalled == signal.SIGINT:
        raise KeyboardInterrupt


def _warn_header_annotations(name: str, schema: dict[str, Any]) -> None:
    """A tool whose ``x-mcp-header`` annotations break SEP-2243 is left out of
    ``tools/list`` by every 2026-07-28 client over Streamable HTTP: say so when it is
    registered, not when a user wonders where it went."""
    from mcpactor.protocol.headers import invalid_header_annotation

    reason = invalid_header_annotation(schema)
    if reason is not None:
        log.warning("tool %r: %s; clients over Streamable HTTP will leave it out of "
                    "tools/list (SEP-2243: x-mcp-header names a header token, once, on a "
                    "string, integer or boolean property reached through properties)",
                    name, reason)


def _first_line(doc: str | None) -> str | None:
    if not doc:
        return None
    return inspect.cleandoc(doc).strip() or None


def _context_param(fn: Callable[..., Any]) -> str | None:
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:
        hints = getattr(fn, "__annotations__", {})
    for name, ann in hints.items():
        if name != "return" and (ann is Context or getattr(ann, "__name__", None) == "Context"):
            return name
    return None


def _as(cls: Any, value: Any) -> Any:
    if value is None or isinstance(value, cls):
        return value
    return from_wire(value, cls)


def _declared(
    capabilities: t.ServerCapabilities | Mapping[str, Any] | Iterable[str] | None,
) -> dict[str, Any]:
    """Capabilities given to ``Server(capabilities=...)`` in wire form."""
    if capabilities is None:
        return {}
    if isinstance(capabilities, t.ServerCapabilities):
        wire = to_wire(capabilities)
        assert isinstance(wire, dict)
        return wire
    if isinstance(capabilities, Mapping):
        return {str(k): v for k, v in capabilities.items()}
    if isinstance(capabilities, str):
        capabilities = [capabilities]
    out: dict[str, Any] = {}
    for feature in capabilities:
        if feature not in _NAMED_CAPABILITIES:
            raise ValueError(
                f"unknown capability {feature!r}: name one of "
                f"{', '.join(_NAMED_CAPABILITIES)}, or pass a dict or ServerCapabilities"
            )
        out[feature] = dict(_NAMED_CAPABILITIES[feature])
    return out


def _not_a_name(decorator: str, what: str, value: object) -> None:
    """``@server.resource`` without its argument hands the function over as the URI."""
    if callable(value):
        raise TypeError(
            f"@server.{decorator} needs {what}: write @server.{decorator}(...) with it, "
            f"as in the docs (got the function {getattr(value, '__name__', value)!r})"
        )


def _icons(icons: list[t.Icon] | list[dict[str, Any]] | None) -> list[t.Icon] | None:
    if icons is None:
        return None
    return [_as(t.Icon, i) for i in icons]


class Server:
    """An MCP server: decorate functions to offer tools, resources, prompts, completions.

    The same ``Server`` serves any number of sessions over any transport; each session
    is its own actor tree (see :mod:`mcpactor.session`).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        limits: Limits = Limits(),  # noqa: B008 - frozen
        capabilities: t.ServerCapabilities | Mapping[str, Any] | Iterable[str] | None = None,
        request_state_key: bytes | str | None = None,
        request_state_ttl: float = 600.0,
        request_state_single_use: bool = False,
        cache: CachePolicy | None = None,
    ) -> None:
        """``capabilities`` declares features up front, beyond what is registered when a
        session starts (a session's capabilities are fixed by its ``initialize``): names
        (``["tools", "prompts", "resources"]``, each with ``listChanged``), a wire-form
        dict or a :class:`~mcpactor.protocol.types.ServerCapabilities`. A server that
        will add its first prompt (tool, resource) while sessions run declares it so
        they can list it and hear ``list_changed``.

        2026-07-28 (stateless requests): ``request_state_key`` signs the
        ``requestState`` of input rounds (default: ``$MCPACTOR_REQUEST_STATE_KEY``, else
        a random key per process; give every worker of a deployment the same key so any
        of them can resume a request), valid for ``request_state_ttl`` seconds, bound to
        the request and the principal; ``request_state_single_use`` takes each state
        once (a retry that presents it again is -32602), for handlers whose inputs
        redeem something: held in this process, so with several workers, a deployment
        that needs it routes a request's rounds to one of them (see
        ``docs/architecture.md``); ``cache`` is the ``ttlMs``/``cacheScope`` put on list and read results
        (default: 0 ms, private)."""
        self.declared_capabilities = _declared(capabilities)
        self.info = t.Implementation(
            name=name,
            version=version,
            title=title,
            description=description,
            website_url=website_url,
            icons=_icons(icons),
        )
        self.instructions = instructions
        self.page_size = page_size
        self.limits = limits
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: list[TemplateEntry] = []
        self.prompts: dict[str, PromptEntry] = {}
        self.completion_handler: Callable[..., Any] | None = None
        self.roots_changed_handler: Callable[..., Any] | None = None
        #: Scale-out: hands every broadcast notification to all the workers, each of
        #: which delivers it to its own sessions (:meth:`deliver_broadcast`); None: this
        #: process's sessions only.
        self.fanout: Callable[[str, Any], Awaitable[None]] | None = None
        #: The initialized sessions, in the order they started (an ordered set: a
        #: broadcast reaches them in the same order every run, and every replay).
        self.sessions: SessionSet = SessionSet()
        self.custom_methods: dict[str, Callable[..., Any]] = {}
        self.request_state_key = request_state_key
        self.request_state_ttl = request_state_ttl
        self.request_state_codec: RequestStateCodec | None = None
        self.request_state_single_use = request_state_single_use
        #: The single-use states already taken (see ``server/rounds.py``).
        self.spent_request_states: SpentStates | None = None
        self.cache_policy = cache or CachePolicy()
        #: Open ``subscriptions/listen`` requests (2026-07-28).
        self.listen_hub = ListenHub()

    # -- capabilities ---------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The capabilities this server declares (wire form)."""
        caps: dict[str, Any] = {"logging": {}}
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        if self.completion_handler is not None:
            caps["completions"] = {}
        for feature, value in self.declared_capabilities.items():
            derived = caps.get(feature)
            if isinstance(derived, dict) and isinstance(value, dict):
                caps[feature] = {**derived, **value}
            else:
                caps[feature] = value
        return caps

    # -- decorators -----------------------------------------------------------------

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: t.ToolAnnotations | dict[str, Any] | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: t.ToolAnnotations | dict[str, Any] | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),  # [auth]
    ) -> Any:
        """Register an ``async def`` (or plain ``def``) as a tool: ``@server.tool`` or
        ``@server.tool(...)`` with options.

        The input schema comes from the parameters' type hints; the description from
        the docstring. A structured return type (see :mod:`mcpactor.server.schema`) gives
        an ``outputSchema`` and ``structuredContent``; ``structured_output=False`` turns
        that off, ``output_schema=`` overrides the generated one. ``input_schema=`` is
        published exactly as given (arguments are still checked against the hints).
        ``scopes``: OAuth scopes a caller's token must hold (HTTP with ``auth=``; a
        call without them is refused with 403 ``insufficient_scope``).
        """

        if callable(name):  # @server.tool, without parentheses (or tool(fn, ...))
            return self.tool(
                None, title=title, description=description, annotations=annotations,
                icons=icons, input_schema=input_schema, output_schema=output_schema,
                structured_output=structured_output, meta=meta, scopes=scopes,
            )(name)

        def register(fn: F) -> F:
            tool_name = name or fn.__name__
            validate_tool_name(tool_name)
            if tool_name in self.tools:
                raise ValueError(f"a tool named {tool_name!r} is already registered")
            sig = build_signature(fn, skip=(Context,), unstructured=_UNSTRUCTURED)
            out_schema = sig.output_schema
            if structured_output is False:
                out_schema = None
            if output_schema is not None:
                out_schema = output_schema
            if out_schema is not sig.output_schema:
                import attrs as _attrs

                sig = _attrs.evolve(sig, output_schema=out_schema)
            if input_schema is not None:
                _warn_header_annotations(tool_name, input_schema)
            tool = t.Tool(
                name=tool_name,
                title=title,
                description=description if description is not None else _first_line(fn.__doc__),
                input_schema=input_schema if input_schema is not None else sig.input_schema,
                output_schema=out_schema,
                annotations=_as(t.ToolAnnotations, annotations),
                icons=_icons(icons),
                meta=meta,
            )
            self.tools[tool_name] = ToolEntry(
                fn, sig, tool, inspect.iscoroutinefunction(fn), tuple(scopes),
                check_output=output_schema is not None,
            )
            return fn

        return register

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (call :meth:`notify_tools_list_changed` afterwards)."""
        del self.tools[name]

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        is_collection: bool | None = None,
        annotations: t.Annotations | dict[str, Any] | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a function that returns the contents of one resource URI.

        Return ``str`` for text, ``bytes`` for a blob, or resource-contents objects (several
        for format alternatives, or for children when ``is_collection=True``). A URI with
        ``{variables}`` registers a template instead (see :meth:`resource_template`).
        Structured data (a list, a dict, a dataclass, a model) is one JSON text
        (``application/json`` unless ``mime_type`` says otherwise). Raise
        :class:`~mcpactor.ResourceNotFound` when a URI names nothing.
        """
        _not_a_name("resource", "a URI", uri)
        if "{" in uri:
            return self.resource_template(
                uri, name=name, title=title, description=description, mime_type=mime_type,
                annotations=annotations, icons=icons, meta=meta, is_collection=is_collection,
            )

        def register(fn: F) -> F:
            res = t.Resource(
                uri=uri,
                name=name or fn.__name__,
                title=title,
                description=description if description is not None else _first_line(fn.__doc__),
                mime_type=mime_type,
                size=size,
                is_collection=is_collection,
                annotations=_as(t.Annotations, annotations),
                icons=_icons(icons),
                meta=meta,
            )
            self.resources[uri] = ResourceEntry(
                fn, res, _context_param(fn), inspect.iscoroutinefunction(fn)
            )
            return fn

        return register

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        is_collection: bool | None = None,
        annotations: t.Annotations | dict[str, Any] | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a function serving every URI that matches an RFC 6570 template; the
        template's variables are passed as keyword arguments."""
        _not_a_name("resource_template", "a URI template", uri_template)
        matcher = UriTemplate(uri_template)

        def register(fn: F) -> F:
            params = dict(inspect.signature(fn).parameters)
            missing = [v for v in matcher.variables if v not in params]
            if missing and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                raise TypeError(
                    f"{fn.__name__}() has no parameter for template variable(s) {missing}"
                )
            tpl = t.ResourceTemplate(
                uri_template=uri_template,
                name=name or fn.__name__,
                title=title,
                description=description if description is not None else _first_line(fn.__doc__),
                mime_type=mime_type,
                annotations=_as(t.Annotations, annotations),
                icons=_icons(icons),
                meta=meta,
            )
            self.templates.append(
                TemplateEntry(
                    fn, tpl, matcher, params, _context_param(fn),
                    inspect.iscoroutinefunction(fn), is_collection,
                )
            )
            return fn

        return register

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Register a prompt. Parameters become prompt arguments (required when they
        have no default; described by ``Annotated[..., Field(description=...)]`` or the
        docstring's ``Args:``); the client's strings are converted to the annotated
        types (``int``, ``bool``, ``Literal``, ``Enum``, models from JSON...), a value
        that does not convert being -32602 naming the argument. Return a ``str`` (one user message), content, a list of
        ``PromptMessage``/``(role, content)`` items, or a ``GetPromptResult``.
        ``@server.prompt`` works without parentheses too."""
        if callable(name):  # @server.prompt, without parentheses (or prompt(fn, ...))
            return self.prompt(
                None, title=title, description=description, icons=icons, meta=meta)(name)

        def register(fn: F) -> F:
            sig = build_prompt_signature(fn, skip=(Context,))
            args = [
                t.PromptArgument(name=a.name, title=a.title, description=a.description,
                                 required=a.required)
                for a in sig.arguments
            ]
            prompt_name = name or fn.__name__
            prompt = t.Prompt(
                name=prompt_name,
                title=title,
                description=description if description is not None else _first_line(fn.__doc__),
                arguments=args or None,
                icons=_icons(icons),
                meta=meta,
            )
            self.prompts[prompt_name] = PromptEntry(
                fn, prompt, sig.context_param, inspect.iscoroutinefunction(fn), sig
            )
            return fn

        return register

    @overload
    def completion(self, fn: F, /) -> F: ...

    @overload
    def completion(self) -> Callable[[F], F]: ...

    def completion(self, fn: Callable[..., Any] | None = None) -> Any:
        """Register the completion handler: ``(ref, argument, context) -> list[str] |
        Completion | CompleteResult``; ``ref`` is a PromptReference or
        ResourceTemplateReference, ``argument`` a CompletionArgument, ``context`` a
        CompletionContext or None. ``@server.completion`` or ``@server.completion()``."""
        if fn is not None:
            return self.completion()(fn)

        def register(fn: F) -> F:
            self.completion_handler = fn
            return fn

        return register

    @overload
    def on_roots_changed(self, fn: F, /) -> F: ...

    @overload
    def on_roots_changed(self) -> Callable[[F], F]: ...

    def on_roots_changed(self, fn: Callable[..., Any] | None = None) -> Any:
        """Register ``async def f(session)`` called when a client's roots change
        (``@server.on_roots_changed`` with or without parentheses)."""
        if fn is not None:
            return self.on_roots_changed()(fn)

        def register(fn: F) -> F:
            self.roots_changed_handler = fn
            return fn

        return register

    def method(self, name: str) -> Callable[[F], F]:
        """Register a handler for a custom (non-MCP) request method: ``f(params, ctx)``."""
        _not_a_name("method", "the method's name", name)

        def register(fn: F) -> F:
            self.custom_methods[name] = fn
            return fn

        return register

    # -- notifications to every session --------------------------------------------------

    async def _broadcast(self, method: str, params: Any = None) -> None:
        if self.fanout is not None:
            await self.fanout(method, params)
            return
        await self.deliver_broadcast(method, params)

    async def deliver_broadcast(self, method: str, params: Any = None) -> None:
        """Send a notification to this process's sessions that should hear it (a
        resource's update: those subscribed to it), and to this process's 2026-era
        ``subscriptions/listen`` streams that asked for it."""
        self.listen_hub.publish(method, params)
        only: list[Session] | None = None
        if method == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            only = [s for s in self.sessions if uri in session_state(s).subscriptions]
        for session in list(only if only is not None else self.sessions):
            if session.closed.is_set() or not session.initialized.is_set():
                continue
            if session.connection.state is not State.OPERATING:
                # Not operating yet (no initialized notification): it lists what is there
                # once it starts, so there is nothing to tell it.
                log.debug("session %s not told %s: not operating yet", session.id, method)
                continue
            try:
                await session.notify(method, params)
            except CapabilityNotSupported:
                # The session started before the feature existed, and capabilities are
                # fixed by initialize: say how to declare it rather than drop it unseen.
                feature = _NOTIFICATION_FEATURE.get(method, method)
                log.warning(
                    "session %s was not told %s: it started before this server had %s, "
                    "so it did not declare them (declare them up front: "
                    "Server(..., capabilities=[%r]))", session.id, method, feature, feature)
            except Exception:  # one dead session must not stop the others
                if session.closed.is_set():
                    log.debug("session %s closed before %s reached it", session.id, method)
                else:
                    log.warning("session %s: sending %s failed", session.id, method,
                                exc_info=True)

    async def notify_tools_list_changed(self) -> None:
        """Tell every session that the tool list changed."""
        await self._broadcast("notifications/tools/list_changed")

    async def notify_prompts_list_changed(self) -> None:
        """Tell every session that the prompt list changed."""
        await self._broadcast("notifications/prompts/list_changed")

    async def notify_resources_list_changed(self) -> None:
        """Tell every session that the resource list changed."""
        await self._broadcast("notifications/resources/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that it changed."""
        await self._broadcast("notifications/resources/updated", {"uri": uri})

    # -- serving ------------------------------------------------------------------------

    async def _serve_recorded(
        self, trace: str | None, transport: str, entry_point: str | None,
        rotation: Rotation | None, serve: Callable[[Recorder | None], Awaitable[None]],
    ) -> None:
        async with self._recording(trace, transport, entry_point, rotation) as recorder:
            await serve(recorder)

    def new_connection(self) -> Connection:
        """A server-role protocol connection declaring this server's capabilities."""
        info = to_wire(self.info)
        connection = Connection(
            Role.SERVER,
            info=info,
            capabilities=self.capabilities(),
            instructions=self.instructions,
            extra_methods=frozenset(self.custom_methods),
        )
        connection.cache_policy = self.cache_policy
        return connection

    def new_session(
        self, transport: Transport, *, tracer: Tracer | None = None, session_id: str | None = None
    ) -> Session:
        """A session serving this server over ``transport`` (call its ``run``)."""
        from mcpactor.server.handler import ServerHandler

        return Session(
            transport,
            self.new_connection(),
            ServerHandler(self),
            tracer=tracer,
            session_id=session_id,
            limits=self.limits,
        )

    async def serve(
        self, transport: Transport, *, tracer: Tracer | None = None, session_id: str | None = None
    ) -> None:
        """Serve one session over ``transport`` until it ends."""
        session = self.new_session(transport, tracer=tracer, session_id=session_id)
        await session.run()

    async def serve_stdio(
        self, *, trace: str | None = None, entry_point: str | None = None,
        rotation: Rotation | None = None,
    ) -> None:
        """Serve one session on this process's stdin/stdout (``trace``: record it, see
        :meth:`run`)."""
        from mcpactor.transports.stdio import StdioServerTransport

        async with self._recording(trace, "stdio", entry_point, rotation) as recorder:
            await self.serve(StdioServerTransport(), tracer=recorder)

    def _recording(
        self, trace: str | None, transport: str, entry_point: str | None,
        rotation: Rotation | None,
    ) -> AbstractAsyncContextManager[Recorder | None]:
        """Record the run's sessions to ``trace`` for the duration of the block (a no-op
        block yielding None without a trace)."""
        if trace is None:
            return nullcontext()
        from mcpactor.tracing.recorder import Recorder, TraceHeader

        recorder = Recorder.at(trace, TraceHeader(role="server", transport=transport,
                                                  entry_point=entry_point),
                               rotation=rotation)
        return recorder.recording()

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        trace: str | None = None,
        entry_point: str | None = None,
        rotation: Rotation | None = None,
        **http_options: Any,
    ) -> None:
        """Serve until the input ends or a signal ends it (blocking).

        ``trace`` records every session of the process to that file (one trace, the
        sessions interleaved as they ran: ``mcpactor replay`` re-executes them together),
        or, given a folder (an existing one, or a path ending in ``/``), one file per
        session; ``rotation`` starts a new file of a whole-process trace now and then
        (see ``docs/trace-format.md``). ``entry_point`` names this server's code in the
        trace, for the replay.

        On SIGTERM or Ctrl-C every session is closed first, recording why (traces are
        written to the end and replay); then SIGTERM returns and Ctrl-C raises
        ``KeyboardInterrupt``, as usual.

        ``http_options`` are fields of :class:`mcpactor.transports.http_options.HttpOptions`
        (``json_response``, ``stateless``, ``allowed_hosts``, ``session_idle_timeout``, ...).
        """
        # A listener that cannot start (a port in use) is its OSError, not a group of one.
        # SIGTERM and Ctrl-C close every session first, so that traces are complete.
        from mcpactor.server.termination import serve_until_signalled

        if transport == "stdio":
            with plain_errors():
                signalled = trio.run(
                    serve_until_signalled,
                    lambda: self.serve_stdio(trace=trace, entry_point=entry_point,
                                             rotation=rotation))
            _after(signalled)
            return
        if transport in ("http", "streamable-http"):
            try:
                from mcpactor.transports.http_server import serve_http
            except ImportError:
                print("mcpactor: the HTTP transport is not available in this build", file=sys.stderr)
                raise SystemExit(2) from None
            with plain_errors():
                signalled = trio.run(serve_until_signalled, lambda: self._serve_recorded(
                    trace, "http", entry_point, rotation, lambda recorder: serve_http(
                        self, host=host, port=port, path=path, tracer=recorder,
                        **http_options)))
            _after(signalled)
            return
        if transport in ("ws", "websocket"):
            from mcpactor.transports.websocket import serve_websocket

            with plain_errors():
                signalled = trio.run(serve_until_signalled, lambda: self._serve_recorded(
                    trace, "ws", entry_point, rotation, lambda recorder: serve_websocket(
                        self, host=host, port=port, path=path, tracer=recorder)))
            _after(signalled)
            return
        raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'http' or 'ws'")
