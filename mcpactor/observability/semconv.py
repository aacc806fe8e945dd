"""The OpenTelemetry semantic conventions for MCP, as names and small pure functions.

Status of the conventions: development (the GenAI semantic-conventions repository,
``docs/gen-ai/mcp.md``). Everything here is plain data: no OpenTelemetry import, so the
rules (span names, error types, the transport attributes) are testable on their own.
"""

from __future__ import annotations

from typing import Any, Final

# -- attributes ------------------------------------------------------------------------

METHOD: Final = "mcp.method.name"
SESSION_ID: Final = "mcp.session.id"
PROTOCOL_VERSION: Final = "mcp.protocol.version"
RESOURCE_URI: Final = "mcp.resource.uri"
REQUEST_ID: Final = "jsonrpc.request.id"
TOOL_NAME: Final = "gen_ai.tool.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
OPERATION_NAME: Final = "gen_ai.operation.name"
ERROR_TYPE: Final = "error.type"
STATUS_CODE: Final = "rpc.response.status_code"
NETWORK_TRANSPORT: Final = "network.transport"
NETWORK_PROTOCOL_NAME: Final = "network.protocol.name"
NETWORK_PROTOCOL_VERSION: Final = "network.protocol.version"

#: mcpactor's own attributes: where the request is in the recording (the jump from a
#: span to its deterministic replay).
TRACE_FILE: Final = "mcpactor.trace.file"
TRACE_SESSION: Final = "mcpactor.trace.session"
TRACE_EVENT: Final = "mcpactor.trace.event"
REPLAY_COMMAND: Final = "mcpactor.replay.command"

# -- span events (not in the conventions: mcpactor's names) ------------------------------

EVENT_PROGRESS: Final = "mcp.progress"
EVENT_CANCELLED: Final = "mcp.cancelled"

# -- metrics -----------------------------------------------------------------------------

SERVER_OPERATION_DURATION: Final = "mcp.server.operation.duration"
CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"
SERVER_SESSION_DURATION: Final = "mcp.server.session.duration"
CLIENT_SESSION_DURATION: Final = "mcp.client.session.duration"
#: The explicit bucket boundaries the conventions give every one of the four (seconds).
DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

METRIC_DESCRIPTIONS: Final = {
    SERVER_OPERATION_DURATION: "MCP request or notification duration as observed on the "
                               "receiver from the time it was received until the result "
                               "or ack is sent.",
    CLIENT_OPERATION_DURATION: "The duration of the MCP request or notification as observed "
                               "on the sender from the time it was sent until the response "
                               "or ack is received.",
    SERVER_SESSION_DURATION: "The duration of the MCP session as observed on the MCP server.",
    CLIENT_SESSION_DURATION: "The duration of the MCP session as observed on the MCP client.",
}

#: The attributes a duration metric keeps (the span's others are high-cardinality).
METRIC_ATTRIBUTES: Final = frozenset({
    METHOD, ERROR_TYPE, TOOL_NAME, PROMPT_NAME, STATUS_CODE, OPERATION_NAME,
    PROTOCOL_VERSION, NETWORK_TRANSPORT, NETWORK_PROTOCOL_NAME, NETWORK_PROTOCOL_VERSION,
})
SESSION_METRIC_ATTRIBUTES: Final = frozenset({
    ERROR_TYPE, PROTOCOL_VERSION, NETWORK_TRANSPORT, NETWORK_PROTOCOL_NAME,
    NETWORK_PROTOCOL_VERSION,
})

# -- error types ---------------------------------------------------------------------------

#: A ``CallToolResult`` with ``isError: true`` (the conventions' value).
TOOL_ERROR: Final = "tool_error"
#: Our request's timeout fired (a cancellation was sent).
TIMEOUT: Final = "timeout"
#: The request was cancelled: by the peer (server side), by the caller (client side), or
#: by the session ending around it.
CANCELLED: Final = "cancelled"
#: The session ended before the answer came.
CONNECTION_CLOSED: Final = "connection_closed"

#: The MCP methods whose params name a resource URI.
_URI_METHODS: Final = frozenset({
    "resources/read", "resources/subscribe", "resources/unsubscribe",
    "notifications/resources/updated", "resources/metadata",
})


def transport_attributes(transport: str) -> dict[str, str]:
    """``network.*`` for one of mcpactor's transport names, as the conventions' table of
    transports says (stdio: a pipe; Streamable HTTP and HTTP+SSE: HTTP over TCP;
    WebSocket over TCP). An in-memory pair has none."""
    if transport == "stdio":
        return {NETWORK_TRANSPORT: "pipe"}
    if transport in ("http", "sse", "streamable-http", "legacy-sse"):
        return {NETWORK_TRANSPORT: "tcp", NETWORK_PROTOCOL_NAME: "http",
                NETWORK_PROTOCOL_VERSION: "1.1"}
    if transport in ("ws", "websocket"):
        return {NETWORK_TRANSPORT: "tcp", NETWORK_PROTOCOL_NAME: "websocket"}
    return {}


def target_of(method: str, params: Any) -> tuple[str | None, dict[str, Any]]:
    """The span name's low-cardinality target (a tool's or a prompt's name) and the
    attributes that come from the request's params (wire form or attrs object)."""
    attributes: dict[str, Any] = {}
    target: str | None = None
    if method == "tools/call":
        attributes[OPERATION_NAME] = "execute_tool"
        name = _param(params, "name")
        if isinstance(name, str):
            target = name
            attributes[TOOL_NAME] = name
    elif method == "prompts/get":
        name = _param(params, "name")
        if isinstance(name, str):
            target = name
            attributes[PROMPT_NAME] = name
    elif method in _URI_METHODS:
        uri = _param(params, "uri")
        if isinstance(uri, str):
            attributes[RESOURCE_URI] = uri
    return target, attributes


def span_name(method: str, target: str | None) -> str:
    """``{mcp.method.name} {target}``, or the method alone without a target."""
    return method if target is None else f"{method} {target}"


def request_id_text(rid: Any) -> str | None:
    """``jsonrpc.request.id``: the id as a string (never for a null or missing id)."""
    if rid is None or isinstance(rid, bool):
        return None
    return str(rid)


def is_tool_error(result: Any) -> bool:
    """Whether a ``tools/call`` result (wire dict or typed) says ``isError: true``."""
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


def session_error_type(close_reason: str | None) -> str | None:
    """``error.type`` of a session that ended for ``close_reason`` (None: a normal end)."""
    if not close_reason:
        return None
    if close_reason.startswith("transport broke"):
        return "transport_broken"
    if " failed: " in close_reason:
        return "actor_failed"
    return None


def _param(params: Any, key: str) -> Any:
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)
