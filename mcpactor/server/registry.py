"""What a server offers: tools, resources, resource templates and prompts.

Each entry keeps the user's function, its compiled signature and the protocol object
that ``*/list`` returns, built once at registration so listing costs nothing per call.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable
from typing import Any

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidParams
from mcpactor.server.dependencies import DependencyPlan
from mcpactor.server.schema import ToolSignature
from mcpactor.server.schema.prompts import PromptSignature
from mcpactor.server.uri_template import UriTemplate

Handler = Callable[..., Any]


@attrs.define(eq=False)
class ToolEntry:
    """A registered tool."""

    fn: Handler
    sig: ToolSignature
    tool: t.Tool
    is_async: bool
    #: [auth] OAuth scopes a token needs to call this tool over HTTP (mcpactor.auth).
    scopes: tuple[str, ...] = ()
    #: The outputSchema was given, not derived from the return type: results are checked
    #: against it (a derived one holds by construction).
    check_output: bool = False
    #: Whether a call may (``optional``), must (``required``) or must not (``forbidden``)
    #: run as a task (2025-11-25 ``execution.taskSupport``; see mcpactor.server.tasks).
    task_support: str = "forbidden"
    #: The function calls ``ctx.begin_task()``: its task starts there (before it, it
    #: runs in the request; see mcpactor.server.tasks).
    begins_task: bool = False
    #: A plain ``def`` runs in a worker thread (``@server.tool(thread=False)``: in the
    #: event loop).
    thread: bool = True
    #: Its ``Depends(...)`` parameters (None: it has none).
    deps: DependencyPlan | None = None


@attrs.define(eq=False)
class ResourceEntry:
    """A registered static resource (one URI)."""

    fn: Handler
    resource: t.Resource
    context_param: str | None
    is_async: bool
    thread: bool = True
    deps: DependencyPlan | None = None


@attrs.define(eq=False)
class TemplateEntry:
    """A registered resource template: a family of URIs, one function."""

    fn: Handler
    template: t.ResourceTemplate
    matcher: UriTemplate
    params: dict[str, inspect.Parameter]
    context_param: str | None
    is_async: bool
    is_collection: bool | None = None
    thread: bool = True
    deps: DependencyPlan | None = None

    def resource_for(self, uri: str) -> t.Resource:
        """The metadata of one concrete resource of this family."""
        tpl = self.template
        return t.Resource(
            uri=uri,
            name=tpl.name,
            title=tpl.title,
            description=tpl.description,
            mime_type=tpl.mime_type,
            annotations=tpl.annotations,
            icons=tpl.icons,
            is_collection=self.is_collection,
        )

    def arguments(self, variables: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments for the function from matched URI variables.

        Variables arrive as strings; parameters annotated ``int``/``float``/``bool`` get
        the converted value, and a value that does not convert is an invalid URI.
        """
        out: dict[str, Any] = {}
        for name, value in variables.items():
            param = self.params.get(name)
            if param is None:
                continue
            ann = param.annotation
            try:
                if ann is int or ann == "int":
                    value = int(value)
                elif ann is float or ann == "float":
                    value = float(value)
                elif ann is bool or ann == "bool":
                    value = str(value).lower() in ("1", "true", "yes")
            except ValueError:
                raise InvalidParams(
                    f"Invalid params: URI variable {name!r} must be {getattr(ann, '__name__', ann)}",
                    data={"path": f"uri.{name}", "reason": f"not a valid {ann}"},
                ) from None
            out[name] = value
        return out


@attrs.define(eq=False)
class PromptEntry:
    """A registered prompt."""

    fn: Handler
    prompt: t.Prompt
    context_param: str | None
    is_async: bool
    #: Turns the client's string arguments into the parameters' types.
    sig: PromptSignature | None = None
    thread: bool = True
    deps: DependencyPlan | None = None


def encode_cursor(offset: int) -> str:
    """An opaque cursor for the page starting at ``offset``."""
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode("ascii")


def decode_cursor(cursor: str | None) -> int:
    """The offset in a cursor we issued; a cursor we did not issue is -32602."""
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode()
        kind, _, num = raw.partition(":")
        offset = int(num)
        if kind != "o" or offset < 0:
            raise ValueError(raw)
        return offset
    except (ValueError, UnicodeError):
        raise InvalidParams(
            "Invalid params: unknown pagination cursor", data={"path": "params.cursor"}
        ) from None


def paginate(items: list[Any], cursor: str | None, page_size: int) -> tuple[list[Any], str | None]:
    """One page of ``items`` and the cursor of the next page (None on the last)."""
    start = decode_cursor(cursor)
    end = start + page_size
    page = items[start:end]
    return page, (encode_cursor(end) if end < len(items) else None)
