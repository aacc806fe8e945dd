"""A small server for `mcpactor demo`: a tool, a slow tool with progress, a resource, a prompt.

It ships inside the package so that `mcpactor demo` runs from an installed wheel:

    python -m mcpactor.demo.server                       # serve over stdio
    python -m mcpactor.demo.server --trace demo.jsonl    # ... and record the session
    mcpactor replay demo.jsonl                           # re-execute it deterministically
"""

from __future__ import annotations

import argparse

import trio

from mcpactor import Context, Server

#: How traces name this module (``python examples/demo_server.py`` runs it as ``__main__``).
ENTRY_MODULE = "mcpactor.demo.server"

server = Server("demo", version="1.0.0", instructions="A tiny server to try record and replay.")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool(annotations={"readOnlyHint": True})
async def slow(steps: int, ctx: Context) -> str:
    """Count to `steps`, a tenth of a second per step, reporting progress."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
        await trio.sleep(0.1)
    return f"counted to {steps}"


@server.resource("demo://greeting", mime_type="text/plain")
async def greeting() -> str:
    """A static text resource."""
    return "Hello from the demo server."


@server.prompt()
async def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code:\n\n{code}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", metavar="PATH", help="record the session as a JSONL trace")
    args = parser.parse_args()
    # The header names the module, so `mcpactor replay` finds it wherever it is installed.
    server.run(trace=args.trace, entry_point=f"{ENTRY_MODULE}:server")


if __name__ == "__main__":
    main()
