"""The stateless era (2026-07-28, SEP-2575): per-request metadata, its checks, and the
shape of modern results.

A modern request carries its protocol version and the client's capabilities in
``params._meta``; there is no handshake and no session. :func:`is_modern_request` tells
such a request from one of a handshake session, :func:`read_request_meta` checks its
``_meta`` (and, over HTTP, the ``MCP-Protocol-Version`` header) and gives the
:class:`ModernRequest` the rest of the stack consults instead of session state, and
:func:`complete_result` stamps what every modern result carries. Pure functions: no I/O.
"""

from __future__ import annotations

from typing import Any

import attrs

from mcpactor.protocol import versions
from mcpactor.protocol.errors import (
    HeaderMismatch,
    InvalidParams,
    UnsupportedProtocolVersion,
)

__all__ = [
    "CACHEABLE_METHODS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_ONLY_METHODS",
    "MODERN_ONLY_NOTIFICATIONS",
    "MRTR_METHODS",
    "REMOVED_INSTEAD",
    "REMOVED_NOTIFICATIONS",
    "REMOVED_REQUESTS",
    "CachePolicy",
    "ModernRequest",
    "check_log_level",
    "complete_result",
    "discover_result",
    "is_modern_request",
    "read_request_meta",
    "removed_method_error",
    "supported_list",
]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

#: Requests 2026-07-28 removed: -32601 (HTTP 404) when a modern request names them.
REMOVED_REQUESTS = frozenset({
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    # The tasks extension (SEP-2663) dropped these two of 2025-11-25's tasks.
    "tasks/result", "tasks/list",
})
#: Notifications 2026-07-28 removed (client to server).
REMOVED_NOTIFICATIONS = frozenset({
    "notifications/initialized", "notifications/roots/list_changed",
    "notifications/elicitation/complete", "notifications/progress",
})
#: What a client does instead of each removed method (for the error that refuses one).
REMOVED_INSTEAD: dict[str, str] = {
    "initialize": "there is no handshake: server/discover tells the server's versions "
                  "and capabilities",
    "ping": "send server/discover (Client.discover()) to check that the server answers",
    "logging/setLevel": "give the level in each request's _meta "
                        "(io.modelcontextprotocol/logLevel; Client.set_logging_level() "
                        "does that in this revision)",
    "resources/subscribe": "open subscriptions/listen with resourceSubscriptions for the "
                           "URIs to hear about (Client.listen(resource_uris=...), in "
                           "either revision)",
    "resources/unsubscribe": "end the subscriptions/listen request that lists the URI "
                             "(leave the Client.listen() block)",
    "tasks/result": "poll tasks/get: a finished task carries its result (TaskHandle."
                    "result() does that in this revision)",
    "tasks/list": "keep the ids of the tasks you start (the tasks extension has no list)",
    "notifications/roots/list_changed": "nothing to tell: a server asks for the roots in "
                                        "each request that needs them",
    "notifications/initialized": "there is no handshake",
    "notifications/elicitation/complete": "an elicitation is an input round of the "
                                          "request that asked for it",
    "notifications/progress": "servers send no requests whose progress a client reports",
}


def check_log_level(level: str | None) -> None:
    """A ValueError for a log level MCP does not name."""
    if level is not None and level not in _LOG_LEVELS:
        raise ValueError(f"unknown log level {level!r}; use one of debug, info, notice, "
                         "warning, error, critical, alert, emergency")


def removed_method_error(method: str, version: str | None) -> str:
    """Why a client in the stateless era cannot send ``method``, and what to do instead:
    connect in the legacy mode, or use the revision's equivalent."""
    instead = REMOVED_INSTEAD.get(method)
    fix = f"; or, in {version}: {instead}" if instead else ""
    return (f"{method} does not exist in protocol version {version}, which this client "
            f"speaks: connect with mode=\"legacy\" to use it (the handshake revisions "
            f"have it){fix}")


#: Methods only the modern era has.
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
#: Notifications only the modern era has (server to client).
MODERN_ONLY_NOTIFICATIONS = frozenset({"notifications/subscriptions/acknowledged"})
#: The requests a server may answer with ``InputRequiredResult`` (MRTR, SEP-2322).
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Results that carry ``ttlMs`` and ``cacheScope`` (SEP-2549).
CACHEABLE_METHODS = frozenset({
    "tools/list", "prompts/list", "resources/list", "resources/templates/list",
    "resources/read", "server/discover",
})
_LOG_LEVELS = frozenset({
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
})


@attrs.frozen(kw_only=True)
class CachePolicy:
    """The caching hints a server puts on cacheable results (SEP-2549): ``ttl_ms`` how
    long a client may reuse one (0: ask again every time), ``scope`` whether shared
    intermediaries may keep it (``"private"``: only this client)."""

    ttl_ms: int = 0
    scope: str = "private"

    def __attrs_post_init__(self) -> None:
        if type(self.ttl_ms) is not int or self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be an integer >= 0, not {self.ttl_ms!r}")
        if self.scope not in ("public", "private"):
            raise ValueError(f"scope must be 'public' or 'private', not {self.scope!r}")


@attrs.frozen(kw_only=True)
class ModernRequest:
    """What a modern request says about itself in ``_meta``: the state a handshake
    session would hold, scoped to this one request."""

    version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    #: The minimum level of ``notifications/message`` the client wants for this
    #: request; None: no log messages at all.
    log_level: str | None = None


def is_modern_request(method: str, params: Any) -> bool:
    """Whether a request belongs to the stateless era: ``server/discover`` always does;
    any other when its ``_meta`` carries the per-request version or capabilities."""
    if method in MODERN_ONLY_METHODS:
        return True
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and (
        META_PROTOCOL_VERSION in meta or META_CLIENT_CAPABILITIES in meta
    )


def supported_list() -> list[str]:
    """Every revision we speak, newest first (``supportedVersions``, and the
    ``supported`` list of an unsupported-version error)."""
    return list(reversed(versions.ALL_VERSIONS))


#: ``header`` argument of :func:`read_request_meta` when the transport has no headers.
NO_HEADERS = object()


def read_request_meta(params: Any, header: object = NO_HEADERS) -> ModernRequest:
    """Check a modern request's ``_meta`` and return what it declares.

    ``header``: the ``MCP-Protocol-Version`` header over HTTP (None when absent),
    :data:`NO_HEADERS` on other transports. The order of the checks is the one the
    error codes need: a missing field is -32602, a header that disagrees with the body
    is -32020, then a version we do not speak is -32022 (with our list).
    """
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is not dict:
        raise InvalidParams(
            "Invalid params: a 2026-07-28 request needs _meta with "
            f"{META_PROTOCOL_VERSION!r} and {META_CLIENT_CAPABILITIES!r}",
            data={"path": "params._meta"},
        )
    version = meta.get(META_PROTOCOL_VERSION)
    if type(version) is not str:
        raise InvalidParams(
            f"Invalid params: _meta needs {META_PROTOCOL_VERSION!r} (a string)",
            data={"path": f"params._meta.{META_PROTOCOL_VERSION}"},
        )
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        raise InvalidParams(
            f"Invalid params: _meta needs {META_CLIENT_CAPABILITIES!r} (an object)",
            data={"path": f"params._meta.{META_CLIENT_CAPABILITIES}"},
        )
    if header is not NO_HEADERS:
        if header is None:
            raise HeaderMismatch("Header mismatch: the MCP-Protocol-Version header is required")
        if header != version:
            raise HeaderMismatch(
                f"Header mismatch: MCP-Protocol-Version header value {header!r} does not "
                f"match the body's {META_PROTOCOL_VERSION} {version!r}"
            )
    if not versions.is_modern(version):
        message = None
        if versions.is_supported(version):
            message = (f"Unsupported protocol version: {version} is a handshake revision; "
                       "open a session with initialize to use it, or use "
                       f"{versions.LATEST_MODERN_VERSION} per request")
        raise UnsupportedProtocolVersion(version, supported_list(), message)
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in _LOG_LEVELS:
        raise InvalidParams(
            f"Invalid params: unknown log level {level!r} in {META_LOG_LEVEL}",
            data={"path": f"params._meta.{META_LOG_LEVEL}"},
        )
    return ModernRequest(
        version=version,
        client_capabilities=caps,
        client_info=info if type(info) is dict else None,
        log_level=level,
    )


def discover_result(
    capabilities: dict[str, Any], info: dict[str, Any], instructions: str | None
) -> dict[str, Any]:
    """The ``server/discover`` result (before :func:`complete_result` stamps it)."""
    result: dict[str, Any] = {
        "supportedVersions": supported_list(),
        "capabilities": modern_capabilities(capabilities),
    }
    if instructions is not None:
        result["instructions"] = instructions
    return result


def modern_capabilities(capabilities: dict[str, Any]) -> dict[str, Any]:
    """Our capabilities as 2026-07-28 has them: ``logging`` stays (the revision still
    defines it, deprecated); ``resources.subscribe`` means ``subscriptions/listen``
    takes resource subscriptions."""
    return capabilities


def complete_result(
    method: str, result: dict[str, Any], server_info: dict[str, Any] | None,
    cache: CachePolicy | None,
) -> dict[str, Any]:
    """A modern result as sent: ``resultType`` (``complete`` unless the result says
    otherwise), the caching hints on cacheable methods, and the server's identity in
    ``_meta``. ``result`` is not changed (a copy is returned)."""
    out = dict(result)
    kind = out.setdefault("resultType", "complete")
    if kind == "complete" and cache is not None and method in CACHEABLE_METHODS:
        out.setdefault("ttlMs", cache.ttl_ms)
        out.setdefault("cacheScope", cache.scope)
    if server_info is not None:
        meta = out.get("_meta")
        meta = dict(meta) if type(meta) is dict else {}
        meta.setdefault(META_SERVER_INFO, server_info)
        out["_meta"] = meta
    return out
