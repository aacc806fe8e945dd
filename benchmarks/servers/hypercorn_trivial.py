"""Ceiling: a trivial ASGI app on hypercorn's Trio worker, answering like the bare servers.

``python hypercorn_trivial.py PORT``. No sessions, no validation: one body read, one
orjson decode, one JSON answer. It is the most any app served through hypercorn's Trio
worker can do on this machine, i.e. the floor cost of hypercorn itself, which is why
mcpactor serves HTTP with its own h11 server by default.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

import orjson
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bare import answer


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI app: lifespan acknowledged, every POST answered."""
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            done = msg["type"] == "lifespan.shutdown"
            await send({"type": msg["type"] + ".complete"})
            if done:
                return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        request = None
    out = answer(request) if isinstance(request, dict) else None
    headers = [(b"content-length", str(len(out or b"")).encode())]
    if out is None:
        await send({"type": "http.response.start", "status": 202, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    headers.append((b"content-type", b"application/json"))
    if request.get("method") == "initialize":
        headers.append((b"mcp-session-id", uuid.uuid4().hex.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    config = Config()
    config.bind = [f"127.0.0.1:{sys.argv[1]}"]
    config.accesslog = None
    # Its default closes a keep-alive connection after 1,000 requests.
    config.keep_alive_max_requests = 10**9
    trio.run(serve, app, config)
