"""``mcpactor demo``: record a real session and replay it, in under a minute.

Spawns ``examples/demo_server.py`` over stdio with ``--trace``, drives it with
:func:`mcpactor.connect_stdio` (a few tools, progress, a resource, a prompt), then
replays the trace deterministically and prints the verdict. Exit status 0 when every
step worked and the replay was faithful.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import trio

_SERVER = Path(__file__).resolve().parent.parent / "examples" / "demo_server.py"


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser("demo", help="record a session with a demo server, then replay it")
    p.add_argument("--trace", default="demo-trace.jsonl", metavar="PATH",
                   help="where to write the trace (default: demo-trace.jsonl)")
    p.add_argument("--server", default=str(_SERVER), metavar="FILE",
                   help="the server script to run (default: examples/demo_server.py)")
    p.set_defaults(func=cmd_demo)


def _say(text: str) -> None:
    print(text, flush=True)


async def _drive(server: str, trace: str) -> None:
    from mcpactor import connect_stdio

    command = [sys.executable, server, "--trace", trace]
    _say(f"1. starting the server over stdio, recording to {trace}:\n   {' '.join(command)}")
    async with connect_stdio(command, timeout=30) as client:
        info = client.server_info
        _say(f"   connected to {info.get('name')} {info.get('version')} "
             f"(protocol {client.protocol_version})")
        tools = await client.list_tools()
        _say(f"2. tools: {', '.join(t.name for t in tools.tools)}")
        added = await client.call_tool("add", {"a": 2, "b": 3})
        _say(f"   add(2, 3) -> {added.structured_content}")
        if added.structured_content != {"result": 5}:
            raise RuntimeError(f"add(2, 3) returned {added.structured_content}")

        def show(progress: float, total: float | None, message: str | None) -> None:
            _say(f"   progress {progress:g}/{total:g}: {message}")

        _say("3. slow(5), with progress:")
        slow = await client.call_tool("slow", {"steps": 5}, on_progress=show)
        _say(f"   slow(5) -> {slow.content[0].text}")  # type: ignore[union-attr]
        resource = await client.read_resource("demo://greeting")
        _say(f"4. resource demo://greeting -> {resource.contents[0].text!r}")  # type: ignore[union-attr]
        prompt = await client.get_prompt("review", {"code": "print('hi')"})
        _say(f"   prompt review -> {len(prompt.messages)} message(s)")


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo."""
    from mcpactor.cli import CliError

    server = Path(args.server)
    if not server.is_file():
        raise CliError(f"no demo server at {server} (run this from a source checkout)")
    trace_path = Path(args.trace)
    started = time.perf_counter()
    try:
        trio.run(_drive, str(server), str(trace_path))
    except Exception as exc:
        print(f"demo: the live session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    live = time.perf_counter() - started
    from replay.engine import ReplayError, replay
    from replay.report import print_verdict
    from replay.trace import TraceError, load_trace

    _say(f"5. the session took {live:.2f} s; replaying {trace_path} deterministically "
         "(virtual clock, same seeds, the real handlers):")
    try:
        trace = load_trace(trace_path)
        began = time.perf_counter()
        result = replay(trace)
    except (TraceError, ReplayError) as exc:
        print(f"demo: cannot replay: {exc}", file=sys.stderr)
        return 1
    print_verdict(result, time.perf_counter() - began, sys.stdout)
    _say(f"\nTry: mcpactor trace show {trace_path}   |   mcpactor replay {trace_path} --step")
    return 0 if result.faithful else 1
