"""The JSON-RPC answers shared by the bare ceiling servers.

Just enough MCP for the benchmark drivers: initialize, server/discover, tools/list,
tools/call echo, ping, and silence for notifications. No validation beyond what the drivers need; these
servers exist to show how fast the I/O path alone can go.
"""

from __future__ import annotations

from typing import Any

import orjson

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(msg: dict[str, Any]) -> bytes | None:
    """Return the encoded response to one decoded message, or None for a notification."""
    if "id" not in msg:
        return None
    method = msg.get("method")
    params = msg.get("params") or {}
    result: dict[str, Any]
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "initialize":
        asked = params.get("protocolVersion")
        result = {
            "protocolVersion": asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-bare", "version": "1.0.0"},
        }
    elif method == "server/discover":
        # 2026-07-28: what the stateless drivers check before their calls (which then
        # come with no session and are answered as any other).
        result = {
            "supportedVersions": [*SUPPORTED_VERSIONS, "2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "echo-bare",
                                                             "version": "1.0.0"}},
        }
    elif method == "tools/list":
        result = {"tools": [_ECHO_TOOL]}
    elif method == "ping":
        result = {}
    else:
        return orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {"code": -32601, "message": f"method not found: {method}"},
            }
        )
    return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})


def answer_line(line: bytes) -> bytes | None:
    """Answer one newline-framed message; the returned bytes already end in a newline."""
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}\n'
    out = answer(msg)
    return None if out is None else out + b"\n"
