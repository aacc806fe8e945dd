"""Composition: one server's tools, resources and prompts served by another, under a
prefix (``parent.mount(child, prefix="weather")``).

The link is live: what the child registers later is listed and callable through the
parent at once, and its ``notify_*`` calls reach the parent's sessions (URIs
prefixed). Names are prefixed as FastMCP does: a tool or prompt ``forecast`` becomes
``weather_forecast``; a resource ``data://cities`` becomes ``data://weather/cities``
(templates alike). A request for a mounted name is handed to the child's own request
handling with the name it knows, so the child's middleware, dependencies and threads
apply, and its handlers' ``ctx.server`` and ``ctx.lifespan`` are the child's; the
parent's middleware wraps it all.

Routing: the parent's own registrations first, then mounted servers (the latest
mounted first), then remote mounts (:mod:`mcpactor.server.remote`), which claim every
name under their prefix. A child's lifespan is entered with the parent's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from mcpactor.protocol import types as t
from mcpactor.session.context import RequestContext

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.server.handler import ServerHandler
    from mcpactor.server.registry import ToolEntry

__all__ = ["LocalMount", "Mount", "check_prefix", "prefix_name", "prefix_uri", "strip_name",
           "strip_uri"]

#: What a prefix may be: it goes into tool names, which are [A-Za-z0-9_.-].
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


def check_prefix(prefix: str | None) -> str | None:
    """``prefix`` if it is usable in tool names and URIs, else a ValueError."""
    if prefix is None or prefix == "":
        return None
    if not _PREFIX.match(prefix):
        raise ValueError(
            f"mount prefix {prefix!r}: use letters, digits, '.' and '-' (it becomes part of "
            "tool names, 'prefix_tool', and of URIs, 'scheme://prefix/path')")
    return prefix


def prefix_name(prefix: str | None, name: str) -> str:
    """``weather`` + ``forecast`` → ``weather_forecast``."""
    return name if prefix is None else f"{prefix}_{name}"


def strip_name(prefix: str | None, name: str) -> str | None:
    """The child's name for a parent's name (None: not under this prefix)."""
    if prefix is None:
        return name
    head = prefix + "_"
    return name[len(head):] if name.startswith(head) and len(name) > len(head) else None


def _split(uri: str) -> tuple[str, str, str] | None:
    """``scheme``, what follows it up to where the prefix goes, and the rest."""
    scheme, sep, rest = uri.partition(":")
    if not sep or not scheme or "{" in scheme:
        return None
    if rest.startswith("///"):
        return scheme, ":///", rest[3:]  # an empty authority (file:///x) stays empty
    if rest.startswith("//"):
        return scheme, "://", rest[2:]
    return scheme, ":", rest


def prefix_uri(prefix: str | None, uri: str) -> str:
    """``data://cities`` → ``data://weather/cities`` (``file:///a`` →
    ``file:///weather/a``, ``urn:x`` → ``urn:weather/x``)."""
    if prefix is None:
        return uri
    parts = _split(uri)
    if parts is None:
        return f"{prefix}/{uri}"
    scheme, sep, rest = parts
    return f"{scheme}{sep}{prefix}/{rest}"


def strip_uri(prefix: str | None, uri: str) -> str | None:
    """The child's URI for a parent's URI (None: not under this prefix)."""
    if prefix is None:
        return uri
    parts = _split(uri)
    if parts is None:
        head = prefix + "/"
        return uri[len(head):] if uri.startswith(head) else None
    scheme, sep, rest = parts
    head = prefix + "/"
    return f"{scheme}{sep}{rest[len(head):]}" if rest.startswith(head) else None


def with_request(rc: RequestContext, method: str, params: Any) -> RequestContext:
    """The same request, as the mounted side sees it (its own names)."""
    return rc.derived(method, params)


class Mount(Protocol):
    """What a parent needs from something mounted in it (a server, or a remote one)."""

    prefix: str | None
    #: Remote mounts claim every name under their prefix (they cannot be asked cheaply).
    remote: bool

    def routes(self, kind: str, inner: str) -> bool:
        """Whether ``inner`` (a ``tool``, ``prompt``, ``resource`` URI or ``template``)
        is served here."""
        ...

    async def forward(self, rc: RequestContext, method: str, params: Any) -> Any:
        """Answer ``method`` with ``params`` in the mounted side's own names."""
        ...

    async def tools(self, rc: RequestContext) -> list[t.Tool]:
        """Every tool, in the mounted side's names."""
        ...

    async def prompts(self, rc: RequestContext) -> list[t.Prompt]:
        """Every prompt, in the mounted side's names."""
        ...

    async def resources(self, rc: RequestContext) -> list[t.Resource]:
        """Every resource, in the mounted side's names."""
        ...

    async def templates(self, rc: RequestContext) -> list[t.ResourceTemplate]:
        """Every resource template, in the mounted side's names."""
        ...

    def capabilities(self) -> dict[str, Any]:
        """What the mounted side adds to the parent's capabilities."""
        ...

    def lifespan(self) -> Any:
        """An async context manager the parent enters with its own lifespan."""
        ...


class LocalMount:
    """A :class:`Server` mounted in another one (see the module)."""

    remote = False

    def __init__(self, server: Server[Any], prefix: str | None) -> None:
        self.server = server
        self.prefix = prefix
        self._handler: ServerHandler | None = None

    @property
    def handler(self) -> ServerHandler:
        """The child's own request handling."""
        if self._handler is None:
            from mcpactor.server.handler import ServerHandler

            self._handler = ServerHandler(self.server)
        return self._handler

    def routes(self, kind: str, inner: str) -> bool:
        """Whether the child (or something mounted in it) serves ``inner``."""
        return self.handler.serves(kind, inner)

    async def forward(self, rc: RequestContext, method: str, params: Any) -> Any:
        """Through the child's middleware to its handler."""
        return await self.handler.handle_request(with_request(rc, method, params))

    async def tools(self, rc: RequestContext) -> list[t.Tool]:
        """The child's tools, its mounts' included."""
        return await self.handler.all_tools(rc)

    async def prompts(self, rc: RequestContext) -> list[t.Prompt]:
        """The child's prompts, its mounts' included."""
        return await self.handler.all_prompts(rc)

    async def resources(self, rc: RequestContext) -> list[t.Resource]:
        """The child's resources, its mounts' included."""
        return await self.handler.all_resources(rc)

    async def templates(self, rc: RequestContext) -> list[t.ResourceTemplate]:
        """The child's templates, its mounts' included."""
        return await self.handler.all_templates(rc)

    def capabilities(self) -> dict[str, Any]:
        """The child's features (not its logging: the parent answers that)."""
        caps = self.server.capabilities()
        return {k: v for k, v in caps.items() if k in ("tools", "resources", "prompts",
                                                        "completions")}

    def lifespan(self) -> Any:
        """The child's lifespan, entered with the parent's."""
        return self.server.running()

    def find_tool(self, inner: str) -> ToolEntry | None:
        """The child's registration of a tool (for per-tool OAuth scopes)."""
        return self.server.find_tool(inner)


# -- the parent's side: names in, names out -------------------------------------------

_NAME_OF: dict[str, Callable[[Any], str]] = {
    "tool": lambda x: x.name,
    "prompt": lambda x: x.name,
    "resource": lambda x: x.uri,
    "template": lambda x: x.uri_template,
}


def outer(kind: str, prefix: str | None, item: Any) -> Any:
    """A listed item in the parent's names."""
    if prefix is None:
        return item
    if kind in ("tool", "prompt"):
        return attrs.evolve(item, name=prefix_name(prefix, item.name))
    if kind == "resource":
        return attrs.evolve(item, uri=prefix_uri(prefix, item.uri))
    return attrs.evolve(item, uri_template=prefix_uri(prefix, item.uri_template))


def inner_key(kind: str, prefix: str | None, key: str) -> str | None:
    """A parent's name in a mount's names (None: not under its prefix)."""
    if kind in ("tool", "prompt"):
        return strip_name(prefix, key)
    return strip_uri(prefix, key)


def ordered(mounts: Iterable[Mount]) -> list[Mount]:
    """Mounts in routing order: servers before remote ones, the latest first."""
    mounts = list(mounts)
    return [m for m in reversed(mounts) if not m.remote] + [
        m for m in reversed(mounts) if m.remote]


def route(mounts: Iterable[Mount], kind: str, key: str) -> tuple[Mount, str] | None:
    """The mount that serves ``key`` (a parent's name), and its name there."""
    for mount in ordered(mounts):
        inner = inner_key(kind, mount.prefix, key)
        if inner is not None and mount.routes(kind, inner):
            return mount, inner
    return None


async def merged(kind: str, own: list[Any], mounts: list[Mount], rc: RequestContext,
                 lister: Callable[[Mount], Callable[[RequestContext], Awaitable[list[Any]]]],
                 ) -> list[Any]:
    """``own`` items and every mount's (in the parent's names), in the order they were
    added; when two share a name, the one a request would reach is listed."""
    key = _NAME_OF[kind]
    per_mount: dict[int, list[Any]] = {}
    for mount in mounts:
        per_mount[id(mount)] = [outer(kind, mount.prefix, item)
                                for item in await lister(mount)(rc)]
    winner: dict[str, int] = {key(item): 0 for item in own}
    for mount in ordered(mounts):
        for item in per_mount[id(mount)]:
            winner.setdefault(key(item), id(mount))
    out = list(own)
    for mount in mounts:
        out.extend(item for item in per_mount[id(mount)] if winner[key(item)] == id(mount))
    return out
