"""The client side of `mcpactor demo`: what it asks the demo server, step by step.

`mcpactor demo` runs :func:`main` against `mcpactor/demo/server.py` over stdio with both
sides recording, then replays both traces: this code runs again against the recorded
server, as any client code named by a client trace does. It reports what it sees
through the ``demo`` logger, which the demo prints and a replay keeps quiet.
"""

from __future__ import annotations

import logging

from mcpactor import Client

log = logging.getLogger("demo")


async def main(client: Client) -> None:
    """List the tools, call two of them (one with progress), read a resource and get a
    prompt; raise if an answer is not what the demo server gives."""
    info = client.server_info
    log.info("   connected to %s %s (protocol %s)", info.get("name"), info.get("version"),
             client.protocol_version)
    tools = await client.list_tools()
    log.info("2. tools: %s", ", ".join(t.name for t in tools.tools))
    added = await client.call_tool("add", {"a": 2, "b": 3})
    log.info("   add(2, 3) -> %s", added.structured_content)
    if added.structured_content != {"result": 5}:
        raise RuntimeError(f"add(2, 3) returned {added.structured_content}")

    def show(progress: float, total: float | None, message: str | None) -> None:
        log.info("   progress %g/%g: %s", progress, total or 0, message)

    log.info("3. slow(5), with progress:")
    slow = await client.call_tool("slow", {"steps": 5}, on_progress=show)
    log.info("   slow(5) -> %s", getattr(slow.content[0], "text", ""))
    resource = await client.read_resource("demo://greeting")
    log.info("4. resource demo://greeting -> %r", getattr(resource.contents[0], "text", ""))
    prompt = await client.get_prompt("review", {"code": "print('hi')"})
    log.info("   prompt review -> %d message(s)", len(prompt.messages))
