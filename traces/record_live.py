"""Record the live race corpus: racy servers under load, real processes, real clients.

    python traces/record_live.py            # (re)record traces/live/
    python traces/record_live.py --check    # record to a temporary folder and replay each

Each recording starts a server (``traces/servers/{bank,entropy,threads}_server.py``) with
``mcpactor run --trace`` over stdio, Streamable HTTP or WebSocket, on 127.0.0.1, and
drives it with concurrent calls and cancellations from one of three clients: raw
JSON-RPC written to the pipe (stdio), mcpactor's own client, and the official ``mcp``
SDK's client. Over HTTP and WebSocket, two clients at once share the server: the trace
holds both sessions, racing on the server's state. Workloads are drawn from a seeded
``random.Random`` per recording; what the servers do with them is up to real timing —
the races come out as they come out, and the traces record which way.

Every trace is kept, then checked: it must replay faithfully, three times. The test
suite (``tests/replay/test_replay_live_corpus.py``) replays each ten times.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
MCPACTOR = [sys.executable, "-m", "mcpactor"]

#: Per server: the calls a workload is drawn from, (tool, arguments, weight).
CALLS: dict[str, list[tuple[str, dict[str, Any], int]]] = {
    "bank": [("withdraw", {"amount": 40}, 5), ("deposit", {"amount": 30}, 1),
             ("transfer", {"amount": 10}, 3), ("audit", {}, 2)],
    "entropy": [("fanout", {"width": 4}, 3), ("queue", {"tag": "x"}, 2),
                ("queue", {"tag": "y"}, 2), ("gate", {}, 2), ("open_gate", {}, 1),
                ("ids", {}, 2), ("tags", {"words": ["ant", "bee", "cat", "dog", "elk"]}, 1)],
    "threads": [("crunch", {}, 3), ("tally", {}, 3), ("deadline", {}, 2)],
}
#: The calls that report progress (they get a progress token).
PROGRESS = frozenset({"transfer"})


def _draw(rnd: random.Random, server: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    calls = CALLS[server]
    picked = rnd.choices(calls, weights=[w for *_, w in calls], k=n)
    return [(name, dict(args)) for name, args, _ in picked]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- drivers ----------------------------------------------------------------------------


def drive_raw(server: str, trace: Path, rnd: random.Random) -> None:
    """JSON-RPC written straight to the server's stdin: bursts of calls, cancellations
    of random ones after random delays."""
    proc = subprocess.Popen([*MCPACTOR, "run", str(SERVERS / f"{server}_server.py:server"),
                             "--trace", str(trace)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: Any) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(obj) + "\n").encode())
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "raw", "version": "0"}}})
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls = _draw(rnd, server, rnd.randint(10, 18))
    for i, (name, args) in enumerate(calls, start=1):
        params: dict[str, Any] = {"name": name, "arguments": args}
        if name in PROGRESS:
            params["_meta"] = {"progressToken": f"p{i}"}
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        if rnd.random() < 0.35:
            time.sleep(rnd.random() * 0.004)
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": rnd.randint(1, i), "reason": "changed my mind"}})
        if rnd.random() < 0.4:
            time.sleep(rnd.random() * 0.003)
    time.sleep(0.1)
    proc.stdin.close()
    proc.stdout.read()
    proc.wait(timeout=30)


async def _mcpactor_session(client: Any, server: str, rnd: random.Random) -> None:
    async def call(name: str, args: dict[str, Any], cancel_after: float | None) -> None:
        with trio.move_on_after(cancel_after if cancel_after is not None else 30):
            await client.call_tool(name, args, on_progress=(
                (lambda p, t, m: None) if name in PROGRESS else None))

    async with trio.open_nursery() as nursery:
        for name, args in _draw(rnd, server, rnd.randint(8, 14)):
            cancel = rnd.random() * 0.004 if rnd.random() < 0.3 else None
            nursery.start_soon(call, name, args, cancel)
            if rnd.random() < 0.4:
                await trio.sleep(rnd.random() * 0.002)


async def _sdk_session(session: Any, server: str, rnd: random.Random) -> None:
    await session.initialize()

    async def call(name: str, args: dict[str, Any]) -> None:
        await session.call_tool(name, args)

    async with trio.open_nursery() as nursery:
        for name, args in _draw(rnd, server, rnd.randint(8, 14)):
            nursery.start_soon(call, name, args)
            if rnd.random() < 0.4:
                await trio.sleep(rnd.random() * 0.002)


def _served(server: str, transport: str, trace: Path,
            clients: Callable[[str], Awaitable[None]]) -> None:
    """Serve ``server`` over ``transport`` with a whole-process trace while ``clients``
    drive it (given the endpoint URL, or None over stdio)."""
    port = _free_port()
    proc = subprocess.Popen(
        [*MCPACTOR, "run", str(SERVERS / f"{server}_server.py:server"), "--transport",
         transport, "--port", str(port), "--trace", str(trace)],
        stderr=subprocess.DEVNULL)
    scheme = "http" if transport == "http" else "ws"
    url = f"{scheme}://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        trio.run(clients, url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def drive_mcpactor(server: str, transport: str, trace: Path, rnd: random.Random) -> None:
    """mcpactor's client: concurrent calls, some given up on (a cancellation is sent)."""
    import mcpactor

    if transport == "stdio":
        async def one() -> None:
            command = [*MCPACTOR, "run", str(SERVERS / f"{server}_server.py:server"),
                       "--trace", str(trace)]
            async with mcpactor.connect_stdio(command, timeout=30) as client:
                await _mcpactor_session(client, server, rnd)

        trio.run(one)
        return

    async def two(url: str) -> None:
        connect = mcpactor.connect_http if transport == "http" else mcpactor.connect_websocket

        async def client(seed: int) -> None:
            async with connect(url) as c:
                await _mcpactor_session(c, server, random.Random(seed))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(client, rnd.randrange(1 << 30))
            nursery.start_soon(client, rnd.randrange(1 << 30))

    _served(server, transport, trace, two)


def drive_sdk(server: str, transport: str, trace: Path, rnd: random.Random) -> None:
    """The official SDK's client (``mcp``), over stdio or Streamable HTTP."""
    from mcp.client.session import ClientSession

    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        async def one() -> None:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "mcpactor", "run", str(SERVERS / f"{server}_server.py:server"),
                      "--trace", str(trace)])
            async with stdio_client(params) as (read, write), \
                    ClientSession(read, write) as session:
                await _sdk_session(session, server, rnd)

        trio.run(one)
        return
    from mcp.client.streamable_http import streamable_http_client

    async def two(url: str) -> None:
        async def client(seed: int) -> None:
            async with streamable_http_client(url) as streams, \
                    ClientSession(streams[0], streams[1]) as session:
                await _sdk_session(session, server, random.Random(seed))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(client, rnd.randrange(1 << 30))
            nursery.start_soon(client, rnd.randrange(1 << 30))

    _served(server, transport, trace, two)


#: What is recorded: (server, transport, driver, how many).
PLAN: list[tuple[str, str, str, int]] = [
    ("bank", "stdio", "raw", 4), ("bank", "stdio", "mcpactor", 2), ("bank", "stdio", "sdk", 2),
    ("bank", "http", "mcpactor", 2), ("bank", "http", "sdk", 2), ("bank", "ws", "mcpactor", 2),
    ("entropy", "stdio", "raw", 3), ("entropy", "stdio", "mcpactor", 2),
    ("entropy", "http", "mcpactor", 2), ("entropy", "ws", "mcpactor", 1),
    ("entropy", "stdio", "sdk", 1),
    ("threads", "stdio", "raw", 3), ("threads", "stdio", "mcpactor", 1),
    ("threads", "http", "sdk", 2), ("threads", "ws", "mcpactor", 1),
]


def record_one(server: str, transport: str, driver: str, n: int, folder: Path) -> Path:
    """One recording; its trace's path."""
    trace = folder / f"{server}-{transport}-{driver}-{n}.jsonl"
    rnd = random.Random(f"{server}-{transport}-{driver}-{n}")
    if driver == "raw":
        drive_raw(server, trace, rnd)
    elif driver == "mcpactor":
        drive_mcpactor(server, transport, trace, rnd)
    else:
        drive_sdk(server, transport, trace, rnd)
    _relative_entry_point(trace)
    return trace


def _relative_entry_point(trace: Path) -> None:
    # The server was named by its absolute path; the corpus moves with the checkout, so
    # the header names it relative to the trace (the replayer looks there).
    import os

    data = trace.read_bytes()
    head, _, rest = data.partition(b"\n")
    header = json.loads(head)
    target, sep, attr = str(header.get("entry_point", "")).partition(":")
    if os.path.isabs(target):
        header["entry_point"] = os.path.relpath(target, trace.parent) + sep + attr
        head = json.dumps(header, separators=(",", ":")).encode()
        trace.write_bytes(head + b"\n" + rest)


def check(trace: Path, times: int = 3) -> str | None:
    """Replay ``trace`` ``times`` times: None if every replay was faithful, else why."""
    for _ in range(times):
        done = subprocess.run([*MCPACTOR, "replay", str(trace)], capture_output=True,
                              text=True, timeout=300, check=False)
        if done.returncode != 0:
            return done.stdout + done.stderr
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="record into a temporary folder and replay each trace")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp()) if args.check else HERE / "live"
    if not args.check:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    failures = 0
    for server, transport, driver, count in PLAN:
        for n in range(1, count + 1):
            trace = record_one(server, transport, driver, n, folder)
            problem = check(trace)
            flags = {w for w in ("OVERDRAWN", "LEAKED") if w in trace.read_text()}
            status = "faithful x3" if problem is None else "NOT FAITHFUL"
            print(f"{trace.name:<40} {status:<13} {' '.join(sorted(flags))}", flush=True)
            if problem is not None:
                failures += 1
                print(problem, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
