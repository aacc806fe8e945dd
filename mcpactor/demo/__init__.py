"""``mcpactor demo``: record a real session and replay it, in under a minute.

Spawns the demo server (:mod:`mcpactor.demo.server`) over stdio with ``--trace``,
drives it with the client code of :mod:`mcpactor.demo.client` (a few tools, progress,
a resource, a prompt) over :func:`mcpactor.connect_stdio`, recording the client's side
too, then replays both traces deterministically (the server's handlers, then the client
code) and prints the verdicts. Exit status 0 when every step worked and both replays
were faithful. Both live in the package, so the demo runs from an installed wheel.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

_SERVER_MODULE = "mcpactor.demo.server"
_CLIENT_CODE = "mcpactor.demo.client:main"


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser("demo", help="record a session with a demo server, then replay it")
    p.add_argument("--trace", default="demo-trace.jsonl", metavar="PATH",
                   help="where to write the trace (default: demo-trace.jsonl)")
    p.add_argument("--client-trace", default="demo-client-trace.jsonl", metavar="PATH",
                   help="where the client writes its side (default: demo-client-trace.jsonl)")
    p.add_argument("--server", default=None, metavar="FILE",
                   help="a server script to run instead of the demo's own "
                   "(mcpactor/demo/server.py)")
    p.set_defaults(func=cmd_demo)


def _say(text: str) -> None:
    print(text, flush=True)


async def _drive(server: str | None, trace: str, client_trace: str) -> None:
    from mcpactor import connect_stdio
    from mcpactor.entrypoint import load_entry_point

    where = ["-m", _SERVER_MODULE] if server is None else [server]
    command = [sys.executable, *where, "--trace", trace]
    _say(f"1. starting the server over stdio, recording to {trace}:\n   {' '.join(command)}")
    _say(f"   (the client records its side too, to {client_trace})")
    client_code = _CLIENT_CODE
    main = load_entry_point(client_code)
    async with connect_stdio(command, timeout=30, trace=client_trace,
                             entry_point=client_code) as client:
        await main(client)


@contextmanager
def _client_says() -> Iterator[None]:
    # The client code reports through the "demo" logger: shown here, quiet in a replay.
    log = logging.getLogger("demo")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)


def _replay(path: Path, what: str) -> bool | None:
    """Replay one trace and print the verdict: faithful, or None if it could not run."""
    from mcpactor.replay.engine import ReplayError, replay
    from mcpactor.replay.report import print_verdict
    from mcpactor.replay.trace import TraceError, load_trace

    try:
        trace = load_trace(path)
        began = time.perf_counter()
        result = replay(trace)
    except (TraceError, ReplayError) as exc:
        print(f"demo: cannot replay {what}: {exc}", file=sys.stderr)
        return None
    print_verdict(result, time.perf_counter() - began, sys.stdout)
    return result.faithful


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo."""
    from mcpactor.cli import CliError

    server = args.server
    if server is not None and not Path(server).is_file():
        raise CliError(f"no demo server at {server} (--server takes a Python file that "
                       "serves over stdio; leave it out for the demo's own)")
    trace_path = Path(args.trace)
    client_path = Path(args.client_trace)
    started = time.perf_counter()
    try:
        with _client_says():
            trio.run(_drive, server, str(trace_path), str(client_path))
    except Exception as exc:
        print(f"demo: the live session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    live = time.perf_counter() - started
    _say(f"5. the session took {live:.2f} s; replaying {trace_path} deterministically "
         "(virtual clock, same seeds, the real handlers):")
    server_ok = _replay(trace_path, "the server's trace")
    if server_ok is None:
        return 1
    _say(f"6. replaying the client's side, {client_path}: the client code of "
         "mcpactor/demo/client.py runs again against the recorded server:")
    client_ok = _replay(client_path, "the client's trace")
    if client_ok is None:
        return 1
    _say(f"\nTry: mcpactor trace show {trace_path}   |   mcpactor replay {trace_path} --step"
         f"   |   mcpactor trace html {client_path} -o client.html")
    return 0 if server_ok and client_ok else 1
