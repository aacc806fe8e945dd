"""``Server``: the registry users decorate, and the entry points that serve it."""

from __future__ import annotations

import inspect
import logging
import os
import signal
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
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import CapabilityNotSupported
from mcpactor.protocol.lifecycle import Role, State
from mcpactor.protocol.modern import CachePolicy
from mcpactor.protocol.mrtr import RequestStateCodec, SpentStates
from mcpactor.server import skills as server_skills
from mcpactor.server import tasks as server_tasks
from mcpactor.server.content import _CONTENT_TYPES
from mcpactor.server.context import Context, session_state
from mcpactor.server.dependencies import dependency_params, plan_dependencies
from mcpactor.server.lifespan import LifespanRunner
from mcpactor.server.listen import ListenHub, task_observer
from mcpactor.server.middleware import MiddlewareFn
from mcpactor.server.registry import PromptEntry, ResourceEntry, TemplateEntry, ToolEntry
from mcpactor.server.schema import build_signature, validate_tool_name
from mcpactor.server.schema.prompts import build_prompt_signature
from mcpactor.server.skills import SkillCatalog, SkillError
from mcpactor.server.uri_template import UriTemplate
from mcpactor.session.groups import plain_errors
from mcpactor.session.session import Limits, Session
from mcpactor.tasks.runtime import TaskOptions, TaskRuntime
from mcpactor.tracing.tracer import Tracer
from mcpactor.transports.base import Transport

if TYPE_CHECKING:
    from mcpactor.server.compose import Mount
    from mcpactor.server.endpoint import ServerEndpoint
    from mcpactor.server.remote import RemoteServer
    from mcpactor.server.routes import Route, RouteHandler
    from mcpactor.tracing.recorder import Recorder, Rotation
    from mcpactor.transports.asgi import Receive, Scope, Send

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=MiddlewareFn)
if TYPE_CHECKING:
    # A default (PEP 696) so that Server("x") is Server[Any] for type checkers; only
    # they see it (typing_extensions is no dependency).
    from typing_extensions import TypeVar as _TypeVarWithDefault

    #: The lifespan's state: ``Server[AppState]``, ``Context[AppState]``.
    LifespanT = _TypeVarWithDefault("LifespanT", default=Any)
else:
    LifespanT = TypeVar("LifespanT")

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
        ann = getattr(ann, "__origin__", None) or ann  # Context[AppState]
        if name != "return" and (ann is Context or getattr(ann, "__name__", None) == "Context"):
            return name
    return None


def _is_async(fn: Callable[..., Any]) -> bool:
    # An object with an async __call__ is awaited too.
    return inspect.iscoroutinefunction(fn) or (
        not inspect.isroutine(fn) and not isinstance(fn, type)
        and inspect.iscoroutinefunction(type(fn).__call__))


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


class Server(Generic[LifespanT]):
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
        tasks: TaskOptions | None = None,
        request_state_key: bytes | str | None = None,
        request_state_ttl: float = 600.0,
        request_state_single_use: bool = False,
        cache: CachePolicy | None = None,
        lifespan: Callable[[Server[LifespanT]], AbstractAsyncContextManager[LifespanT]]
        | Callable[[], AbstractAsyncContextManager[LifespanT]] | None = None,
        middleware: Sequence[MiddlewareFn] = (),
    ) -> None:
        """``capabilities`` declares features up front, beyond what is registered when a
        session starts (a session's capabilities are fixed by its ``initialize``): names
        (``["tools", "prompts", "resources"]``, each with ``listChanged``), a wire-form
        dict or a :class:`~mcpactor.protocol.types.ServerCapabilities`. A server that
        will add its first prompt (tool, resource) while sessions run declares it so
        they can list it and hear ``list_changed``.

        ``tasks``: how tools registered with ``task=`` run as tasks (TTLs, how many at
        once, the store; see :class:`~mcpactor.tasks.TaskOptions` and ``docs/tasks.md``).

        2026-07-28 (stateless requests): ``request_state_key`` signs the
        ``requestState`` of input rounds (default: ``$MCPACTOR_REQUEST_STATE_KEY``, else
        a random key per process; give every worker of a deployment the same key so any
        of them can resume a request; ``serve_http(state_key=)``, i.e. ``mcpactor run
        --state-key``/``$MCPACTOR_STATE_KEY``, replaces it), valid for
        ``request_state_ttl`` seconds, bound to the request and the principal;
        ``request_state_single_use`` takes each state once (a retry that presents it
        again is -32602), for handlers whose inputs redeem something: held in this
        process, so with several workers, a deployment that needs it routes a request's
        rounds to one of them (see ``docs/architecture.md``); ``cache`` is the
        ``ttlMs``/``cacheScope`` put on list and read results (default: 0 ms, private).

        ``lifespan``: ``fn(server)`` (or ``fn()``) returning an async context manager
        (an ``@asynccontextmanager`` function) entered once while the server is served;
        what it yields is ``ctx.lifespan`` in handlers (see
        :mod:`mcpactor.server.lifespan`). ``middleware``: functions (or
        :class:`~mcpactor.server.middleware.Middleware` objects) wrapping every request
        and notification, the first outermost (see :meth:`add_middleware`)."""
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
        #: Runs this server's tasks (tools called as tasks), shared by all its sessions:
        #: a task outlives the session that created it.
        self.task_runtime = TaskRuntime(tasks)
        #: Folders of Agent Skills served by the skills extension (:meth:`add_skills`).
        self.skill_catalogs: list[SkillCatalog] = []
        self.request_state_key = request_state_key
        self.request_state_ttl = request_state_ttl
        self.request_state_codec: RequestStateCodec | None = None
        self.request_state_single_use = request_state_single_use
        #: The single-use states already taken (see ``server/rounds.py``).
        self.spent_request_states: SpentStates | None = None
        self.cache_policy = cache or CachePolicy()
        #: Open ``subscriptions/listen`` requests (2026-07-28).
        self.listen_hub = ListenHub()
        self.task_runtime.observers.append(task_observer(self.listen_hub))
        #: The middleware chain, outermost first (a list: append to add one).
        self.middleware: list[MiddlewareFn] = list(middleware)
        #: What is mounted here (servers and remote servers), in the order mounted.
        self.mounts: list[Mount] = []
        #: Servers this one is mounted in, with how (for forwarding notifications).
        self._parents: list[tuple[Server[Any], Mount]] = []
        #: Custom HTTP routes (``@server.custom_route``).
        self.http_routes: list[Route] = []
        self._lifespan = LifespanRunner[LifespanT](self, lifespan)

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
        tasks = server_tasks.capability(self)
        if tasks is not None:
            # 2025-11-25's tasks and the 2026-07-28 extension, each shown only to its
            # revision (protocol.versions.capabilities_for).
            caps["tasks"] = tasks
            caps["extensions"] = {t.TASKS_EXTENSION: {}}
        skills = server_skills.capability(self)
        if skills is not None:
            # Skill files are read as resources: the extension needs that capability.
            caps.setdefault("resources", {"subscribe": True, "listChanged": True})
            caps.setdefault("extensions", {})[server_skills.SKILLS_EXTENSION] = skills
        for mount in self.mounts:
            for feature, value in mount.capabilities().items():
                if isinstance(caps.get(feature), dict) and isinstance(value, dict):
                    caps[feature] = {**value, **caps[feature]}
                else:
                    caps.setdefault(feature, value)
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
        task: str | bool | None = None,
        begins_task: bool = False,
        thread: bool = True,
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
        task: str | bool | None = None,
        begins_task: bool = False,
        thread: bool = True,
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
        ``task``: ``"optional"`` (a client may call it as a task), ``"required"`` (it
        must) or ``"forbidden"`` (the default); see ``docs/tasks.md``. The function is
        the same either way. ``begins_task=True``: the function says where its task
        begins (``await ctx.begin_task()``); what it does before runs in the request
        itself (in 2026-07-28 its questions are input rounds), and the task starts
        there.

        A plain ``def`` runs in a worker thread (``trio.to_thread.run_sync``), so a
        blocking tool stalls no session; ``thread=False`` runs it in the event loop
        (for quick functions, or ones that are not thread-safe). Parameters declared
        ``x: T = Depends(fn)`` are filled per call (see
        :mod:`mcpactor.server.dependencies`) and left out of the input schema.
        """
        task_support = server_tasks.check_task_support(task)
        if begins_task and task_support == "forbidden":
            raise ValueError("begins_task=True is for a tool that runs as a task: give "
                             "task='optional' or task='required' too")

        if callable(name):  # @server.tool, without parentheses (or tool(fn, ...))
            return self.tool(
                None, title=title, description=description, annotations=annotations,
                icons=icons, input_schema=input_schema, output_schema=output_schema,
                structured_output=structured_output, meta=meta, scopes=scopes, task=task,
                begins_task=begins_task, thread=thread,
            )(name)

        def register(fn: F) -> F:
            tool_name = name or fn.__name__
            validate_tool_name(tool_name)
            if tool_name in self.tools:
                raise ValueError(f"a tool named {tool_name!r} is already registered")
            deps = plan_dependencies(fn, f"tool {tool_name!r}")
            sig = build_signature(fn, skip=(Context,), unstructured=_UNSTRUCTURED,
                                  injected=dependency_params(fn) if deps else ())
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
                execution=(t.ToolExecution(task_support=task_support)  # type: ignore[arg-type]
                           if task_support != "forbidden" else None),
                meta=meta,
            )
            self.tools[tool_name] = ToolEntry(
                fn, sig, tool, _is_async(fn), tuple(scopes),
                check_output=output_schema is not None, thread=thread, deps=deps,
                task_support=task_support, begins_task=begins_task,
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
        thread: bool = True,
    ) -> Callable[[F], F]:
        """Register a function that returns the contents of one resource URI.

        Return ``str`` for text, ``bytes`` for a blob, or resource-contents objects (several
        for format alternatives, or for children when ``is_collection=True``). A URI with
        ``{variables}`` registers a template instead (see :meth:`resource_template`).
        Structured data (a list, a dict, a dataclass, a model) is one JSON text
        (``application/json`` unless ``mime_type`` says otherwise). Raise
        :class:`~mcpactor.ResourceNotFound` when a URI names nothing. A plain ``def``
        runs in a worker thread unless ``thread=False``; ``Depends(...)`` parameters
        are filled per read.
        """
        _not_a_name("resource", "a URI", uri)
        if "{" in uri:
            return self.resource_template(
                uri, name=name, title=title, description=description, mime_type=mime_type,
                annotations=annotations, icons=icons, meta=meta, is_collection=is_collection,
                thread=thread,
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
                fn, res, _context_param(fn), _is_async(fn), thread=thread,
                deps=plan_dependencies(fn, f"resource {uri!r}"),
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
        thread: bool = True,
    ) -> Callable[[F], F]:
        """Register a function serving every URI that matches an RFC 6570 template; the
        template's variables are passed as keyword arguments (a plain ``def`` in a
        worker thread unless ``thread=False``)."""
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
                    _is_async(fn), is_collection, thread=thread,
                    deps=plan_dependencies(fn, f"resource template {uri_template!r}"),
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
        thread: bool = True,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[t.Icon] | list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        thread: bool = True,
    ) -> Any:
        """Register a prompt. Parameters become prompt arguments (required when they
        have no default; described by ``Annotated[..., Field(description=...)]`` or the
        docstring's ``Args:``); the client's strings are converted to the annotated
        types (``int``, ``bool``, ``Literal``, ``Enum``, models from JSON...), a value
        that does not convert being -32602 naming the argument. Return a ``str`` (one user message), content, a list of
        ``PromptMessage``/``(role, content)`` items, or a ``GetPromptResult``.
        ``@server.prompt`` works without parentheses too. A plain ``def`` runs in a
        worker thread unless ``thread=False``; ``Depends(...)`` parameters are filled
        per call and are not prompt arguments."""
        if callable(name):  # @server.prompt, without parentheses (or prompt(fn, ...))
            return self.prompt(
                None, title=title, description=description, icons=icons, meta=meta,
                thread=thread)(name)

        def register(fn: F) -> F:
            deps = plan_dependencies(fn, f"prompt {name or fn.__name__!r}")
            sig = build_prompt_signature(fn, skip=(Context,),
                                         injected=dependency_params(fn) if deps else ())
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
                fn, prompt, sig.context_param, _is_async(fn), sig, thread=thread, deps=deps,
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

    def add_skills(
        self,
        path: str | os.PathLike[str],
        *,
        directory_read: bool = True,
        cache_ttl: float = 0.0,
        cache_scope: str = "private",
    ) -> SkillCatalog:
        """Serve the Agent Skills in a folder (the skills extension, SEP-2640): each
        folder below ``path`` with a ``SKILL.md`` (front matter with ``name`` and
        ``description``; the folder named as the skill) is a skill, or ``path`` is one
        skill's folder. Clients list them (``skills/list``, ``skills/get``) and read
        their files as ``skill://`` resources; ``directory_read`` also answers
        ``resources/directory/read``; ``cache_ttl`` (seconds) and ``cache_scope``
        (``private``/``public``) say how long clients may keep the lists. A skill that
        cannot be served is a :class:`~mcpactor.server.skills.SkillError` naming the
        file. See ``docs/skills.md``."""
        catalog = SkillCatalog(path, directory_read=directory_read, cache_ttl=cache_ttl,
                               cache_scope=cache_scope)
        taken = {s.uri for c in self.skill_catalogs for s in c.skills}
        clash = sorted(taken.intersection(s.uri for s in catalog.skills))
        if clash:
            raise SkillError(f"add_skills({str(path)!r}): {', '.join(clash)} already served "
                             "by a folder added before")
        self.skill_catalogs.append(catalog)
        server_skills.install(self)
        return catalog

    def method(self, name: str) -> Callable[[F], F]:
        """Register a handler for a custom (non-MCP) request method: ``f(params, ctx)``."""
        _not_a_name("method", "the method's name", name)

        def register(fn: F) -> F:
            self.custom_methods[name] = fn
            return fn

        return register

    # -- middleware, composition, HTTP routes ------------------------------------------

    def add_middleware(self, middleware: M) -> M:
        """Add a middleware, inside those added before: ``async def mw(ctx, call_next)``
        or a :class:`~mcpactor.server.middleware.Middleware` object (usable as a
        decorator: ``@server.add_middleware``). It wraps every request and notification
        the server's handlers get, from the next one on (see
        :mod:`mcpactor.server.middleware`)."""
        if not callable(middleware):
            raise TypeError(f"a middleware is a callable (ctx, call_next), got {middleware!r}")
        self.middleware.append(middleware)
        return middleware

    def mount(self, server: Server[Any] | RemoteServer, prefix: str | None = None, *,
              namespace: str | None = None) -> None:
        """Serve another server's tools, resources, templates and prompts as this one's,
        live, under ``prefix`` (``namespace`` is the same, as FastMCP 3 names it): a
        tool ``forecast`` is ``prefix_forecast``, a resource ``data://cities`` is
        ``data://prefix/cities`` (see :mod:`mcpactor.server.compose`). ``server`` may
        be a :class:`~mcpactor.server.remote.RemoteServer` (a command or a URL).
        Mount before serving: the mounted lifespans are entered with this one's."""
        from mcpactor.server.compose import LocalMount, check_prefix
        from mcpactor.server.remote import RemoteServer

        if prefix is not None and namespace is not None and prefix != namespace:
            raise ValueError("give prefix= or namespace=, not both")
        prefix = check_prefix(prefix if prefix is not None else namespace)
        if isinstance(server, RemoteServer):
            if server.mounted:
                raise ValueError(f"the remote server {server.label} is mounted already "
                                 "(make one RemoteServer per mount)")
            self._not_while_serving(server.label)
            server.mounted = True
            server.prefix = prefix
            server.parent = self
            self.mounts.append(server)
            self._lifespan.hooks.append(server.lifespan)
            return
        if not isinstance(server, Server):
            raise TypeError(f"mount() takes a Server or a RemoteServer, got {server!r}")
        if server is self or any(server is a for a in self._ancestors()):
            raise ValueError(f"mounting {server.info.name!r} in {self.info.name!r} makes a cycle")
        if server._lifespan.user is not None or server._lifespan.hooks:
            self._not_while_serving(repr(server.info.name))
        mount = LocalMount(server, prefix)
        self.mounts.append(mount)
        server._parents.append((self, mount))
        self._lifespan.hooks.append(lambda _server: server.running())

    def _not_while_serving(self, what: str) -> None:
        # Its lifespan (a proxy's connections, a child's state) goes in with ours.
        if self._lifespan.active:
            raise RuntimeError(
                f"mount {what} before serving {self.info.name!r}: it needs a lifespan, "
                "which is entered when serving starts")

    def _ancestors(self) -> Iterator[Server[Any]]:
        """The servers this one is mounted in, at any depth."""
        for parent, _ in self._parents:
            yield parent
            yield from parent._ancestors()

    @classmethod
    def as_proxy(cls, target: str | Sequence[str] | Server[Any], *, name: str | None = None,
                 **options: Any) -> Server[None]:
        """A server that serves a remote one: ``target`` is a command line (a string
        or a list: stdio), an http(s):// or ws(s):// URL, or a Server; ``options`` go to
        the ``connect_*`` function (``headers``, ``auth``, ``env``, ``timeout``...).
        See :mod:`mcpactor.server.remote`."""
        from mcpactor.server.remote import proxy

        return proxy(target, name=name, **options)

    def find_tool(self, name: str) -> ToolEntry | None:
        """The registration of the tool a ``tools/call`` of ``name`` reaches, mounted
        servers included (None: unknown, or served by a remote server)."""
        entry = self.tools.get(name)
        if entry is not None or not self.mounts:
            return entry
        from mcpactor.server.compose import route

        found = route(self.mounts, "tool", name)
        if found is None:
            return None
        mount, inner = found
        finder = getattr(mount, "find_tool", None)
        return finder(inner) if finder is not None else None

    def custom_route(self, path: str, methods: Sequence[str] = ("GET",), *,
                     auth: bool = False) -> Callable[[RouteHandler], RouteHandler]:
        """Serve an HTTP route beside the MCP endpoint (a health check, a webhook, an
        OAuth callback): ``async def handler(request: HttpRequest)`` returning an
        :class:`~mcpactor.server.routes.HttpResponse`, a ``str``, ``bytes``, a dict or
        list (JSON) or None (204). ``path`` may hold ``{name}`` segments
        (``request.path_params``). Host/Origin checks apply as to the endpoint; the
        route is public unless ``auth=True`` (then the bearer token of
        ``HttpOptions(auth=...)`` is required as for MCP requests). Mounted servers'
        routes are served too. See :mod:`mcpactor.server.routes`."""
        from mcpactor.server.routes import Route

        def register(fn: RouteHandler) -> RouteHandler:
            self.http_routes.append(Route.of(path, methods, fn, auth=auth))
            return fn

        return register

    async def serve_http_route(self, scope: Scope, receive: Receive, send: Send,
                               max_body: int) -> bool:
        """(The HTTP app's hook) answer a request for a custom route; False when no
        route's path matches."""
        routes = self.all_routes()
        if not routes:
            return False
        from mcpactor.server.routes import find, serve_route

        matches = find(routes, scope.get("path", ""))
        if not matches:
            return False
        await serve_route(matches, scope, receive, send, max_body)
        return True

    def http_route_needs_auth(self, path: str) -> bool:
        """(The HTTP app's hook) whether a custom route at ``path`` wants the token."""
        return any(route.auth and route.match(path) is not None
                   for route in self.all_routes())

    def all_routes(self) -> list[Route]:
        """This server's HTTP routes, then its mounted servers'."""
        from mcpactor.server.compose import LocalMount

        routes = list(self.http_routes)
        for mount in self.mounts:
            if isinstance(mount, LocalMount):
                routes.extend(mount.server.all_routes())
        return routes

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
        """Tell every session that the tool list changed (a server this one is mounted
        in tells its own)."""
        await self._broadcast("notifications/tools/list_changed")
        for parent, _ in self._parents:
            await parent.notify_tools_list_changed()

    async def notify_prompts_list_changed(self) -> None:
        """Tell every session that the prompt list changed."""
        await self._broadcast("notifications/prompts/list_changed")
        for parent, _ in self._parents:
            await parent.notify_prompts_list_changed()

    async def notify_resources_list_changed(self) -> None:
        """Tell every session that the resource list changed."""
        await self._broadcast("notifications/resources/list_changed")
        for parent, _ in self._parents:
            await parent.notify_resources_list_changed()

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that it changed (through a server
        this one is mounted in, by the URI it serves it as)."""
        await self._broadcast("notifications/resources/updated", {"uri": uri})
        if self._parents:
            from mcpactor.server.compose import prefix_uri

            for parent, mount in self._parents:
                await parent.notify_resource_updated(prefix_uri(mount.prefix, uri))

    # -- serving ------------------------------------------------------------------------

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

    def session_endpoint(self) -> ServerEndpoint:
        """What the transports serve (``McpHttpApp``, ``serve_http``,
        ``serve_websocket``): this server as a
        :class:`~mcpactor.transports.endpoint.SessionEndpoint`."""
        from mcpactor.server.endpoint import ServerEndpoint

        return ServerEndpoint(self)

    # -- lifespan ---------------------------------------------------------------------

    def running(self) -> AbstractAsyncContextManager[LifespanT]:
        """Enter the server's lifespan (and its mounted servers'), or share it if it is
        entered already; yields the state. Every way of serving enters it: call it
        yourself only to serve sessions by hand (``new_session``). See
        :mod:`mcpactor.server.lifespan`."""
        return self._lifespan.running()

    @property
    def lifespan_state(self) -> LifespanT:
        """What the lifespan yielded (None without one); a
        :class:`~mcpactor.server.lifespan.LifespanNotRunning` error while not served."""
        state: LifespanT = self._lifespan.require()
        return state

    # -- serving ------------------------------------------------------------------------

    async def serve(
        self, transport: Transport, *, tracer: Tracer | None = None, session_id: str | None = None
    ) -> None:
        """Serve one session over ``transport`` until it ends (in the server's
        lifespan, entered here unless it already is)."""
        session = self.new_session(transport, tracer=tracer, session_id=session_id)
        async with self.running():
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

    async def serve_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        trace: str | None = None,
        entry_point: str | None = None,
        rotation: Rotation | None = None,
        http_server: str = "h11",
        quiet: bool = False,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
        **http_options: Any,
    ) -> None:
        """Serve Streamable HTTP (and legacy HTTP+SSE, and the custom routes) from
        inside your own Trio program, until cancelled. With ``nursery.start`` the task
        status is the endpoint's URL (``port=0`` picks a free port). ``http_server``:
        ``"h11"`` (the built-in server) or ``"hypercorn"``; ``http_options`` are
        :class:`~mcpactor.transports.http_options.HttpOptions` fields (``stateless``,
        ``json_response``, ``auth``, ``allowed_hosts``...); ``trace``: see :meth:`run`."""
        from mcpactor.transports.http_serve import serve_http

        async with self._recording(trace, "http", entry_point, rotation) as recorder, \
                self.running():
            await serve_http(self.session_endpoint(), host=host, port=port, path=path, tracer=recorder,
                             http_server=http_server, quiet=quiet, task_status=task_status,
                             **http_options)

    async def serve_websocket(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        trace: str | None = None,
        entry_point: str | None = None,
        rotation: Rotation | None = None,
        quiet: bool = False,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
        **options: Any,
    ) -> None:
        """Serve MCP over WebSocket (subprotocol ``mcp``) until cancelled; the task
        status is the ``ws://`` URL (``options``: ``allowed_hosts``,
        ``allowed_origins``)."""
        from mcpactor.transports.websocket import serve_websocket

        async with self._recording(trace, "ws", entry_point, rotation) as recorder, \
                self.running():
            await serve_websocket(self.session_endpoint(), host=host, port=port, path=path, tracer=recorder,
                                  quiet=quiet, task_status=task_status, **options)

    async def run_async(self, transport: str = "stdio", **options: Any) -> None:
        """:meth:`run` inside a Trio program you run yourself: ``"stdio"``
        (:meth:`serve_stdio`), ``"http"`` (:meth:`serve_http`) or ``"ws"``
        (:meth:`serve_websocket`), with their options. Signals are yours to handle."""
        if transport == "stdio":
            await self.serve_stdio(**options)
        elif transport in ("http", "streamable-http", "sse"):
            await self.serve_http(**options)
        elif transport in ("ws", "websocket"):
            await self.serve_websocket(**options)
        else:
            raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'http' (or 'sse', "
                         "served with it) or 'ws'")

    def asgi_app(self, *, path: str = "/mcp", **http_options: Any) -> Callable[
            [Scope, Receive, Send], Awaitable[None]]:
        """The Streamable HTTP endpoint (with the legacy SSE one and the custom routes)
        as an ASGI application, for an ASGI server running on Trio (hypercorn with
        ``--worker-class trio``, or one mounted in a Trio web framework). Its ASGI
        lifespan enters the server's lifespan and starts the sessions' task group;
        ``http_options`` are :class:`~mcpactor.transports.http_options.HttpOptions`
        fields. See :mod:`mcpactor.server.asgi_app`."""
        from mcpactor.server.asgi_app import ServerAsgiApp

        return ServerAsgiApp(self, path=path, **http_options)

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
            if trace is None and os.environ.get("MCPACTOR_REPLAY_FOLLOW"):
                # `mcpactor replay --against` asks this process to follow a recording
                # (its handlers' schedule, clocks and entropy): see replay/livefollow.py.
                from mcpactor.replay.livefollow import follow_request, serve_following

                follow = follow_request()
                if follow is not None:
                    with plain_errors():
                        serve_following(self, follow)
                    return
            with plain_errors():
                signalled = trio.run(
                    serve_until_signalled,
                    lambda: self.serve_stdio(trace=trace, entry_point=entry_point,
                                             rotation=rotation))
            _after(signalled)
            return
        if transport in ("http", "streamable-http", "sse"):
            # "sse" (the 2024-11-05 transport) is served by the same app, beside
            # Streamable HTTP: at /sse and /messages/.
            with plain_errors():
                signalled = trio.run(serve_until_signalled, lambda: self.serve_http(
                    host=host, port=port, path=path, trace=trace, entry_point=entry_point,
                    rotation=rotation, **http_options))
            _after(signalled)
            return
        if transport in ("ws", "websocket"):
            with plain_errors():
                signalled = trio.run(serve_until_signalled, lambda: self.serve_websocket(
                    host=host, port=port, path=path, trace=trace, entry_point=entry_point,
                    rotation=rotation))
            _after(signalled)
            return
        raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'http' (or 'sse', "
                         "served with it) or 'ws'")
