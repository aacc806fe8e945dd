"""The server side of a session: MCP requests routed to the registered handlers."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import connection as pc
from mcpactor.protocol import types as t
from mcpactor.protocol.convert import from_wire
from mcpactor.protocol.errors import (
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidResult,
    LocalProtocolError,
    McpError,
    MethodNotFound,
    RequestError,
    RequestTimeout,
    ResourceNotFound,
)
from mcpactor.protocol.json_schema import first_error
from mcpactor.protocol.mrtr import InputRequired
from mcpactor.protocol.versions import resource_not_found_code
from mcpactor.server import compose
from mcpactor.server import skills as server_skills
from mcpactor.server import tasks as server_tasks
from mcpactor.server.compat import downgrade_content, downgrade_tool_result
from mcpactor.server.content import _CONTENT_TYPES, resource_contents, to_content, to_json_text
from mcpactor.server.context import LOG_LEVELS, Context, session_state
from mcpactor.server.dependencies import DependencyPlan
from mcpactor.server.listen import listen
from mcpactor.server.registry import ResourceEntry, TemplateEntry, ToolEntry, paginate
from mcpactor.server.rounds import finish_rounds, open_rounds
from mcpactor.server.schema import serialize_output, to_jsonable
from mcpactor.session.context import RequestContext
from mcpactor.session.session import Session
from mcpactor.tasks import wire as tasks_wire
from mcpactor.tasks import wire_ext as tasks_wire_ext

if TYPE_CHECKING:
    from mcpactor.server.app import Server

log = logging.getLogger("mcpactor.server")


class ToolError(Exception):
    """Raise in a tool to report a failure to the model as an ``isError`` result."""


async def _call(fn: Callable[..., Any], is_async: bool, kwargs: dict[str, Any],
                thread: bool = True) -> Any:
    if is_async:
        return await fn(**kwargs)
    if thread:
        # A plain def blocks: in a worker thread the session (and every other one) goes
        # on meanwhile. Looked up on the module at each call, so that a recording's
        # stand-in for it (mcpactor.tracing.entropy) sees the wait and a replay repeats
        # how it ended.
        return await trio.to_thread.run_sync(functools.partial(fn, **kwargs))
    return fn(**kwargs)


async def _call_entry(entry: Any, kwargs: dict[str, Any], rc: RequestContext,
                      server: Server[Any]) -> Any:
    """Call a registered handler: its dependencies first (cleaned up after it), then
    the function, in a worker thread if it is a plain def that wants one."""
    deps: DependencyPlan | None = entry.deps
    if deps is None:
        return await _call(entry.fn, entry.is_async, kwargs, entry.thread)
    async with AsyncExitStack() as stack:
        await deps.fill(stack, kwargs, lambda: Context(rc, server))
        return await _call(entry.fn, entry.is_async, kwargs, entry.thread)


class ServerHandler:
    """Implements :class:`mcpactor.session.SessionHandler` for a :class:`Server`."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._routes: dict[str, Callable[[RequestContext], Awaitable[Any]]] = {
            "tools/call": self.call_tool,
            "tools/list": self.list_tools,
            "resources/list": self.list_resources,
            "resources/templates/list": self.list_templates,
            "resources/read": self.read_resource,
            "resources/metadata": self.resource_metadata,
            "resources/subscribe": self.subscribe,
            "resources/unsubscribe": self.unsubscribe,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
            "logging/setLevel": self.set_level,
            "tasks/get": self.tasks,
            "tasks/result": self.tasks,
            "tasks/list": self.tasks,
            "tasks/cancel": self.tasks,
            "tasks/update": self.tasks,
            "subscriptions/listen": self.listen,
        }

    # -- SessionHandler -----------------------------------------------------------------

    async def handle_request(self, rc: RequestContext) -> Any:
        """Answer one request: through the server's middleware (if any) to its route."""
        if self.server.middleware or rc.modern is not None:
            return await self._through(rc)
        # A legacy request's route inline (as in route()): one call frame less on every
        # request.
        route = self._routes.get(rc.method)
        if route is not None:
            return await route(rc)
        return await self.route(rc)

    async def _through(self, rc: RequestContext) -> Any:
        """The general path: a 2026-07-28 request's input rounds around the middleware
        chain around the route. The rounds are opened (``inputResponses`` and the signed
        ``requestState`` read) before the middleware runs, and a handler's
        ``InputRequired`` goes out through the middleware (each round is a request of its
        own, which the middleware sees) to be answered here as ``InputRequiredResult``.
        A mounted server's handling of a parent's request finds the rounds open and
        leaves the answering to the parent."""
        opens = rc.modern is not None and rc.state is None
        if opens:
            open_rounds(rc, self.server)
        try:
            if self.server.middleware:
                from mcpactor.server.middleware import request_through

                return await request_through(self.server, rc, self.route)
            return await self.route(rc)
        except InputRequired as need:
            if not opens:
                raise
            if rc.state is None:
                raise InternalError("input was asked for outside an input round") from None
            return finish_rounds(rc, self.server, need)

    async def route(self, rc: RequestContext) -> Any:
        """Route one request to its implementation."""
        route = self._routes.get(rc.method)
        if route is not None:
            return await route(rc)
        custom = self.server.custom_methods.get(rc.method)
        if custom is not None:
            return await custom(rc.params, Context(rc, self.server))
        raise MethodNotFound(f"Method not found: {rc.method}")

    async def listen(self, rc: RequestContext) -> Any:
        """``subscriptions/listen`` (2026-07-28 only)."""
        if rc.modern is None:
            raise MethodNotFound("Method not found: subscriptions/listen (2026-07-28 only)")
        return await listen(rc, self.server)

    async def handle_notification(self, session: Session, event: pc.NotificationReceived) -> None:
        """Client notifications, through the server's middleware (if any)."""
        if self.server.middleware:
            from mcpactor.server.middleware import notification_through

            await notification_through(self.server, session, event, self.notified)
            return
        await self.notified(session, event)

    async def notified(self, session: Session, event: pc.NotificationReceived) -> None:
        """Roots changes reach the application's hook."""
        if event.method == "notifications/roots/list_changed":
            hook = self.server.roots_changed_handler
            if hook is not None:
                await hook(session)

    def on_initialized(self, session: Session, event: pc.Initialized) -> None:
        """Start counting this session among the server's live sessions."""
        self.server.sessions.add(session)

    def on_operation_started(self, session: Session) -> None:
        """Nothing to do: requests were already accepted after initialize."""

    def on_closed(self, session: Session) -> None:
        """Forget the session."""
        self.server.sessions.discard(session)

    # -- tools -------------------------------------------------------------------------

    # -- what this server serves, its mounts' included -----------------------------------

    def serves(self, kind: str, key: str) -> bool:
        """Whether a ``tool``, ``prompt``, ``resource`` URI or ``template`` is served
        here (by this server or one mounted in it)."""
        server = self.server
        if kind == "tool":
            own: bool = key in server.tools
        elif kind == "prompt":
            own = key in server.prompts
        elif kind == "resource":
            own = self._find_own(key) is not None
        else:
            own = any(tpl.template.uri_template == key for tpl in server.templates)
        return own or (bool(server.mounts) and compose.route(server.mounts, kind, key)
                       is not None)

    async def all_tools(self, rc: RequestContext) -> list[t.Tool]:
        """Every tool, mounted ones included."""
        own = [e.tool for e in self.server.tools.values()]
        if not self.server.mounts:
            return own
        return await compose.merged("tool", own, self.server.mounts, rc, lambda m: m.tools)

    async def all_prompts(self, rc: RequestContext) -> list[t.Prompt]:
        """Every prompt, mounted ones included."""
        own = [e.prompt for e in self.server.prompts.values()]
        if not self.server.mounts:
            return own
        return await compose.merged("prompt", own, self.server.mounts, rc,
                                    lambda m: m.prompts)

    async def all_resources(self, rc: RequestContext) -> list[t.Resource]:
        """Every resource, mounted ones included."""
        own = [e.resource for e in self.server.resources.values()]
        if self.server.skill_catalogs:
            own += server_skills.list_resources(self.server)
        if not self.server.mounts:
            return own
        return await compose.merged("resource", own, self.server.mounts, rc,
                                    lambda m: m.resources)

    async def all_templates(self, rc: RequestContext) -> list[t.ResourceTemplate]:
        """Every resource template, mounted ones included."""
        own = [e.template for e in self.server.templates]
        if not self.server.mounts:
            return own
        return await compose.merged("template", own, self.server.mounts, rc,
                                    lambda m: m.templates)

    def _mounted(self, kind: str, key: str) -> tuple[compose.Mount, str] | None:
        mounts = self.server.mounts
        return compose.route(mounts, kind, key) if mounts else None

    async def list_tools(self, rc: RequestContext) -> t.ListToolsResult:
        """``tools/list``, paginated."""
        tools = await self.all_tools(rc)
        page, nxt = paginate(tools, _cursor(rc), self.server.page_size)
        return t.ListToolsResult(tools=page, next_cursor=nxt)

    async def call_tool(self, rc: RequestContext) -> Any:
        """``tools/call``: unknown tool → -32602; everything the tool does wrong →
        an ``isError`` result the model can read (the draft tools page's split)."""
        params: t.CallToolRequestParams = rc.params
        entry = self.server.tools.get(params.name)
        if entry is None:
            mounted = self._mounted("tool", params.name)
            if mounted is not None:
                mount, inner = mounted
                return await mount.forward(rc, rc.method, attrs.evolve(params, name=inner))
            raise InvalidParams(
                f"Unknown tool: {params.name}", data={"path": "params.name", "name": params.name}
            )
        if entry.task_support != "forbidden" or params.task is not None:
            return await server_tasks.call_tool(self, rc, entry, params)
        return await self.run_tool(rc, entry, params)

    async def run_tool(self, rc: RequestContext, entry: ToolEntry,
                       params: t.CallToolRequestParams) -> Any:
        """Run a tool and make its result: the one path of a plain call and a task."""
        sig = entry.sig
        try:
            kwargs = sig.validate(params.arguments)
        except InvalidParams as exc:
            return _error_result(f"Invalid arguments for tool {params.name}: {exc.message}")
        if sig.context_param is not None:
            kwargs[sig.context_param] = Context(rc, self.server)
        try:
            if entry.deps is None:  # the common case, without _call_entry's frame
                value = await _call(entry.fn, entry.is_async, kwargs, entry.thread)
            else:
                value = await _call_entry(entry, kwargs, rc, self.server)
        except ToolError as exc:
            return _error_result(str(exc))
        except (LocalProtocolError, RequestError, RequestTimeout, ConnectionClosed,
                InvalidResult) as exc:
            # The tool's own conversation with the client failed (a capability the client
            # lacks, an error answer, a timeout): the model should read that as a result.
            return _error_result(f"Error executing tool {params.name}: {exc.message}")
        except McpError:
            raise  # raised on purpose by the tool: a protocol error
        except Exception as exc:
            log.exception("tool %s failed", params.name)
            return _error_result(f"Error executing tool {params.name}: {exc}")
        if type(value) is str and sig.output_schema is None:
            # The common case, built as wire data directly: no converter on the hot path.
            return {"content": [{"type": "text", "text": value}]}
        version = rc.protocol_version
        if isinstance(value, t.CallToolResult):
            if sig.output_schema is not None and not value.is_error:
                # Built by the tool itself, so not conforming by construction; servers
                # MUST send structured results that match the declared schema.
                problem = _nonconforming(value.structured_content, sig.output_schema)
                if problem is not None:
                    return _error_result(f"Tool {params.name} returned an invalid result: "
                                         f"{problem}")
            return downgrade_tool_result(value, version)
        if sig.output_schema is not None and not _holds_content(value):
            try:
                structured = serialize_output(sig, value)
            except TypeError as exc:
                return _error_result(f"Tool {params.name} returned an invalid result: {exc}")
            if structured is not None:
                if entry.check_output:
                    problem = _nonconforming(structured, sig.output_schema)
                    if problem is not None:
                        return _error_result(f"Tool {params.name} returned an invalid "
                                             f"result: {problem}")
                return t.CallToolResult(
                    content=[t.TextContent(text=to_json_text(structured))],
                    structured_content=structured,
                )
        try:
            return t.CallToolResult(content=downgrade_content(to_content(value), version))
        except TypeError as exc:
            return _error_result(f"Tool {params.name} returned an invalid result: {exc}")

    async def tasks(self, rc: RequestContext) -> Any:
        """``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` (2025-11-25;
        gated by the ``tasks`` capability in the method table), or the 2026-07-28
        extension's ``tasks/get``, ``tasks/update``, ``tasks/cancel``."""
        if rc.modern is not None:
            return await tasks_wire_ext.answer(self.server.task_runtime, rc)
        return await tasks_wire.answer(self.server.task_runtime, rc)

    # -- resources ---------------------------------------------------------------------

    async def list_resources(self, rc: RequestContext) -> t.ListResourcesResult:
        """``resources/list``, paginated."""
        items = await self.all_resources(rc)
        page, nxt = paginate(items, _cursor(rc), self.server.page_size)
        return t.ListResourcesResult(resources=page, next_cursor=nxt)

    async def list_templates(self, rc: RequestContext) -> t.ListResourceTemplatesResult:
        """``resources/templates/list``, paginated."""
        items = await self.all_templates(rc)
        page, nxt = paginate(items, _cursor(rc), self.server.page_size)
        return t.ListResourceTemplatesResult(resource_templates=page, next_cursor=nxt)

    def _find_own(
        self, uri: str
    ) -> tuple[t.Resource, ResourceEntry | TemplateEntry, dict[str, Any]] | None:
        """The resource at ``uri`` registered on this server: its metadata, entry and
        keyword arguments (a template's variables); None when there is none."""
        entry = self.server.resources.get(uri)
        if entry is not None:
            return entry.resource, entry, {}
        for tpl in self.server.templates:
            variables = tpl.matcher.match(uri)
            if variables is not None:
                return tpl.resource_for(uri), tpl, tpl.arguments(variables)
        return None

    async def _read_mounted(self, rc: RequestContext, uri: str, version: str | None,
                            ) -> t.ReadResourceResult:
        mounted = self._mounted("resource", uri)
        if mounted is None:
            raise _not_found(uri, version, rc.method)
        mount, inner = mounted
        params: t.ReadResourceRequestParams = rc.params
        try:
            result = await mount.forward(rc, rc.method, attrs.evolve(params, uri=inner))
        except ResourceNotFound as exc:
            raise _not_found(uri, version, rc.method, exc.message) from None
        # Contents carry the URIs the mounted side knows: give them the parent's.
        contents = [c if c.uri != inner else attrs.evolve(c, uri=uri) for c in result.contents]
        contents = [c if c.uri == uri else attrs.evolve(c, uri=compose.prefix_uri(
            mount.prefix, c.uri)) for c in contents]
        return attrs.evolve(result, contents=contents)

    async def read_resource(self, rc: RequestContext) -> t.ReadResourceResult:
        """``resources/read`` with SEP-2093 metadata on every contents item and its
        collection rules: a non-collection returns only the URI asked for."""
        params: t.ReadResourceRequestParams = rc.params
        uri = params.uri
        if self.server.skill_catalogs and uri.startswith(server_skills.SCHEME):
            skill_file = server_skills.read(self.server, uri)
            if skill_file is not None:
                return skill_file
        version = rc.protocol_version
        found = self._find_own(uri)
        if found is None:
            return await self._read_mounted(rc, uri, version)
        resource, entry, kwargs = found
        if entry.context_param is not None:
            kwargs[entry.context_param] = Context(rc, self.server)
        try:
            value = await _call_entry(entry, kwargs, rc, self.server)
        except ResourceNotFound as exc:
            # Raised by the handler, which cannot know the session's revision.
            raise _not_found(exc.uri, version, rc.method, exc.message) from None
        except McpError:
            raise
        except Exception as exc:
            log.exception("resource %s failed", uri)
            raise InternalError(f"Internal error reading {uri}: {exc}") from exc
        if isinstance(value, t.ReadResourceResult):
            contents = list(value.contents)
        elif isinstance(value, (list, tuple)) and any(
                isinstance(item, _RESOURCE_CONTENTS) for item in value):
            contents = [self._contents(resource, item) for item in value]
        else:
            contents = [self._contents(resource, value)]
        if not contents:
            raise InternalError(f"resource {uri} produced no contents")
        if resource.is_collection is False and any(c.uri != uri for c in contents):
            raise InternalError(
                f"resource {uri} is not a collection but returned other URIs"
            )
        return t.ReadResourceResult(contents=contents)

    @staticmethod
    def _contents(resource: t.Resource, item: Any) -> t.TextResourceContents | t.BlobResourceContents:
        if isinstance(item, _RESOURCE_CONTENTS):
            return item
        mime_type = resource.mime_type
        if not isinstance(item, (str, bytes, bytearray)):
            # Data (a list, a dict, a model) is one JSON document, not one item each.
            try:
                item = to_json_text(to_jsonable(item))
            except TypeError as exc:
                raise InternalError(
                    f"resource {resource.uri} returned {type(item).__name__} ({exc}); "
                    "return str, bytes, resource contents or JSON-able data"
                ) from None
            mime_type = mime_type or "application/json"
        return resource_contents(
            resource.uri,
            bytes(item) if isinstance(item, bytearray) else item,
            mime_type,
            name=resource.name,
            title=resource.title,
            description=resource.description,
            is_collection=resource.is_collection,
            annotations=resource.annotations,
            icons=resource.icons,
        )

    async def resource_metadata(self, rc: RequestContext) -> t.ReadResourceMetadataResult:
        """``resources/metadata`` (SEP-2093): the resource without its contents."""
        params: t.ReadResourceMetadataRequestParams = rc.params
        version = rc.protocol_version
        found = self._find_own(params.uri)
        if found is not None:
            return t.ReadResourceMetadataResult(resource=found[0])
        mounted = self._mounted("resource", params.uri)
        if mounted is None:
            raise _not_found(params.uri, version, rc.method)
        mount, inner = mounted
        try:
            result = await mount.forward(rc, rc.method, attrs.evolve(params, uri=inner))
        except ResourceNotFound as exc:
            raise _not_found(params.uri, version, rc.method, exc.message) from None
        return attrs.evolve(result, resource=attrs.evolve(result.resource, uri=params.uri))

    async def subscribe(self, rc: RequestContext) -> dict[str, Any]:
        """``resources/subscribe``: remember the URI for this session (and ask a remote
        server that serves it to tell us about it)."""
        params: t.SubscribeRequestParams = rc.params
        await self._subscribe_remote(rc, params)
        session_state(rc.session).subscriptions.add(params.uri)
        return {}

    async def unsubscribe(self, rc: RequestContext) -> dict[str, Any]:
        """``resources/unsubscribe``."""
        params: t.UnsubscribeRequestParams = rc.params
        await self._subscribe_remote(rc, params)
        session_state(rc.session).subscriptions.discard(params.uri)
        return {}

    async def _subscribe_remote(self, rc: RequestContext, params: Any) -> None:
        if not self.server.mounts or self._find_own(params.uri) is not None:
            return
        mounted = self._mounted("resource", params.uri)
        if mounted is not None:
            mount, inner = mounted
            # A mounted server's updates reach us through Server.notify_resource_updated.
            if mount.remote:
                await mount.forward(rc, rc.method, attrs.evolve(params, uri=inner))

    # -- prompts -----------------------------------------------------------------------

    async def list_prompts(self, rc: RequestContext) -> t.ListPromptsResult:
        """``prompts/list``, paginated."""
        items = await self.all_prompts(rc)
        page, nxt = paginate(items, _cursor(rc), self.server.page_size)
        return t.ListPromptsResult(prompts=page, next_cursor=nxt)

    async def get_prompt(self, rc: RequestContext) -> t.GetPromptResult:
        """``prompts/get``: missing required arguments are -32602."""
        params: t.GetPromptRequestParams = rc.params
        entry = self.server.prompts.get(params.name)
        if entry is None:
            mounted = self._mounted("prompt", params.name)
            if mounted is not None:
                mount, inner = mounted
                return await mount.forward(rc, rc.method, attrs.evolve(params, name=inner))
            raise InvalidParams(
                f"Unknown prompt: {params.name}", data={"path": "params.name", "name": params.name}
            )
        given = dict(params.arguments or {})
        declared = {a.name: a for a in entry.prompt.arguments or []}
        missing = [n for n, a in declared.items() if a.required and n not in given]
        if missing:
            raise InvalidParams(
                f"Missing required argument(s) for prompt {params.name}: {', '.join(missing)}",
                data={"path": "params.arguments", "missing": missing},
            )
        if entry.sig is not None:
            kwargs = entry.sig.convert(params.name, given)
        else:
            kwargs = {k: v for k, v in given.items() if k in declared}
        if entry.context_param is not None:
            kwargs[entry.context_param] = Context(rc, self.server)
        try:
            value = await _call_entry(entry, kwargs, rc, self.server)
        except McpError:
            raise
        except Exception as exc:
            log.exception("prompt %s failed", params.name)
            raise InternalError(f"Internal error rendering prompt {params.name}: {exc}") from exc
        result = _prompt_result(value, entry.prompt.description)
        version = rc.protocol_version
        messages = [
            m if (c := downgrade_content([m.content], version)[0]) is m.content
            else attrs.evolve(m, content=c)
            for m in result.messages
        ]
        return attrs.evolve(result, messages=messages) if messages != result.messages else result

    # -- completion and logging ----------------------------------------------------------

    async def complete(self, rc: RequestContext) -> t.CompleteResult:
        """``completion/complete``: delegates to the registered completion handler."""
        params: t.CompleteRequestParams = rc.params
        mounted = self._completion_mount(params.ref)
        if mounted is not None:
            mount, ref = mounted
            return await mount.forward(rc, rc.method, attrs.evolve(params, ref=ref))
        handler = self.server.completion_handler
        if handler is None:
            raise MethodNotFound("Method not found: completion/complete")
        value = handler(params.ref, params.argument, params.context)
        if hasattr(value, "__await__"):
            value = await value
        if isinstance(value, t.CompleteResult):
            return value
        if isinstance(value, t.Completion):
            return t.CompleteResult(completion=value)
        values = list(value or [])
        return t.CompleteResult(
            completion=t.Completion(
                values=values[:100], total=len(values), has_more=len(values) > 100
            )
        )

    def _completion_mount(self, ref: Any) -> tuple[compose.Mount, Any] | None:
        """The mount a completion's reference names, and the reference in its names."""
        if not self.server.mounts:
            return None
        if isinstance(ref, t.PromptReference):
            if ref.name in self.server.prompts:
                return None
            mounted = self._mounted("prompt", ref.name)
            return None if mounted is None else (
                mounted[0], attrs.evolve(ref, name=mounted[1]))
        uri = getattr(ref, "uri", None)
        if not isinstance(uri, str) or any(
                tpl.template.uri_template == uri for tpl in self.server.templates):
            return None
        mounted = self._mounted("template", uri)
        return None if mounted is None else (mounted[0], attrs.evolve(ref, uri=mounted[1]))

    async def set_level(self, rc: RequestContext) -> dict[str, Any]:
        """``logging/setLevel``: the minimum level of messages this session receives."""
        params: t.SetLevelRequestParams = rc.params
        if params.level not in LOG_LEVELS:
            raise InvalidParams(
                f"Invalid params: unknown log level {params.level!r}",
                data={"path": "params.level"},
            )
        session_state(rc.session).log_level = params.level
        return {}


_RESOURCE_CONTENTS = (t.TextResourceContents, t.BlobResourceContents)


def _not_found(
    uri: str, version: str | None, method: str, message: str = "Resource not found"
) -> ResourceNotFound:
    """The "Resource not found" answer for a session speaking ``version``."""
    return ResourceNotFound(uri, message, code=resource_not_found_code(version, method))


def _holds_content(value: Any) -> bool:
    """Whether a return value is (or lists) content objects rather than structured data."""
    if isinstance(value, _CONTENT_TYPES):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(v, _CONTENT_TYPES) for v in value)


def _cursor(rc: RequestContext) -> str | None:
    p = rc.params
    return getattr(p, "cursor", None) if p is not None else None


def _nonconforming(structured: Any, schema: dict[str, Any]) -> str | None:
    """Why ``structured`` is not a valid result for ``schema`` (None: it is)."""
    if structured is None:
        return "its outputSchema needs structuredContent, and it has none"
    error = first_error(structured, schema)
    return None if error is None else f"structuredContent does not match its outputSchema: {error}"


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _prompt_result(value: Any, description: str | None) -> t.GetPromptResult:
    if isinstance(value, t.GetPromptResult):
        return value
    items = value if isinstance(value, (list, tuple)) else [value]
    messages: list[t.PromptMessage] = []
    for item in items:
        if isinstance(item, t.PromptMessage):
            messages.append(item)
        elif isinstance(item, tuple) and len(item) == 2:
            role, content = item
            for block in to_content(content):
                messages.append(t.PromptMessage(role=role, content=block))
        elif isinstance(item, dict) and "role" in item:
            messages.append(from_wire(item, t.PromptMessage))
        else:
            for block in to_content(item):
                messages.append(t.PromptMessage(role="user", content=block))
    return t.GetPromptResult(messages=messages, description=description)

