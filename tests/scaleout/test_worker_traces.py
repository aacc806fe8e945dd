"""Traces per worker: ``mcpactor run --workers 2 --redis URL --trace DIR/`` behind
haproxy (a new connection per request, so the kernel spreads them over both workers
and most requests of a session are relayed to its owner). Each worker records into
``DIR/worker-I/``; each file's header names the worker's pid; ``mcpactor replay``
reproduces every worker's sessions, the relayed requests included."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from scaleout_support import SERVER, Haproxy, RedisServer, free_port, need_programs, stop, wait_port

from mcpactor import connect_http

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path, int]]:
    need_programs()
    redis = RedisServer(tmp_path)
    redis.start()
    port = free_port()
    traces = tmp_path / "traces"
    with open(tmp_path / "supervisor.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor", "run", SERVER, "--transport", "http",
             "--port", str(port), "--workers", "2", "--redis", redis.url,
             "--max-connections-per-peer", "0", "--trace", f"{traces}/"],
            stdout=out, stderr=subprocess.STDOUT)
    balancer: Haproxy | None = None
    try:
        wait_port(port, proc)
        balancer = Haproxy(tmp_path, [port])
        yield proc, balancer.url, traces, redis.port
    finally:
        if balancer is not None:
            balancer.stop()
        stop(proc, timeout=20)
        redis.stop()


def test_each_worker_records_its_own_trace_and_it_replays(
    traced: tuple[subprocess.Popen[bytes], str, Path, int],
) -> None:
    proc, url, traces, redis_port = traced

    async def session() -> None:
        with trio.fail_after(30):
            async with connect_http(url, mode="legacy") as client:
                for n in range(1, 9):
                    result = await client.call_tool("steps", {"n": n % 3 + 1})
                    assert result.content[0].text == f"{n % 3 + 1} steps"  # type: ignore[union-attr]

    trio.run(session)
    # Requests did reach the worker that does not own the session, and were relayed
    # (its inbox entries of kind "r" in the owner's inbox).
    cli = ["redis-cli", "-p", str(redis_port)]
    inboxes = subprocess.run([*cli, "--scan", "--pattern", "mcpactor:q:*"], capture_output=True,
                             text=True, check=True, timeout=10).stdout.split()
    relayed = sum(subprocess.run([*cli, "XRANGE", key, "-", "+"], capture_output=True,
                                 text=True, check=True, timeout=10).stdout.split("\n").count("r")
                  for key in inboxes)
    assert relayed >= 1, inboxes
    proc.send_signal(signal.SIGTERM)  # the workers close their sessions and traces
    assert proc.wait(20) == 0
    folders = sorted(p.name for p in traces.iterdir())
    assert folders == ["worker-0", "worker-1"], folders
    files = sorted(traces.glob("worker-*/*.jsonl"))
    # One session, owned by one worker: its trace is in that worker's folder only.
    assert len(files) == 1, files
    header = json.loads(files[0].read_text().splitlines()[0])
    assert header["type"] == "header" and isinstance(header["pid"], int)
    records = [json.loads(line) for line in files[0].read_text().splitlines()[1:]]
    calls = [r for r in records if r.get("kind") == "message_in"
             and (r.get("msg") or {}).get("method") == "tools/call"]
    assert len(calls) == 8  # every call, wherever it landed, ran on the owner
    replay = subprocess.run([sys.executable, "-m", "mcpactor", "replay", str(files[0])],
                            capture_output=True, text=True, timeout=60)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "reproduced" in (replay.stdout + replay.stderr)
