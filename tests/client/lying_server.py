"""A hand-rolled stdio MCP server that breaks rules mcpactor's own server would not: tool
results that break their outputSchema, a page cursor that never ends. One JSON-RPC
message per line, no framework."""

from __future__ import annotations

import json
import sys

SCHEMA = {
    "type": "object",
    "properties": {"celsius": {"type": "number"}, "city": {"type": "string"}},
    "required": ["celsius", "city"],
}
TOOLS = [
    {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA},
    {"name": "plain", "inputSchema": {"type": "object"}},
]
#: What each call of ``weather`` answers, by the "mode" argument.
ANSWERS = {
    "good": {"content": [{"type": "text", "text": "{}"}],
             "structuredContent": {"celsius": 21.5, "city": "Oslo"}},
    "wrong_type": {"content": [{"type": "text", "text": "{}"}],
                   "structuredContent": {"celsius": "warm", "city": "Oslo"}},
    "missing": {"content": [{"type": "text", "text": "21.5 in Oslo"}]},
    "error": {"content": [{"type": "text", "text": "no weather today"}], "isError": True},
}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}, "resources": {}},
                "serverInfo": {"name": "lying", "version": "1"}}})
        elif method == "resources/list":
            # A pagination bug: every page points at the same next page.
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resources": [{"uri": "file:///a", "name": "a"}], "nextCursor": "same"}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            args = msg["params"].get("arguments") or {}
            if msg["params"]["name"] == "plain":
                result = ANSWERS["wrong_type"]
            else:
                result = ANSWERS[args.get("mode", "good")]
            if args.get("then_changed"):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main()
