"""SIGTERM and Ctrl-C end a served process the way the end of its input would: every
session closes (recording why), traces are complete and replay; the process exits 0 on
SIGTERM and 130 on Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from mcpactor import connect_http

ROOT = Path(__file__).resolve().parents[2]
RACE_SERVER = f"{ROOT / 'traces' / 'servers' / 'race_server.py'}:server"
MCPACTOR = [sys.executable, "-m", "mcpactor"]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _replays(trace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPACTOR, "replay", str(trace)], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("signum", "status", "reason"), [
    (signal.SIGTERM, 0, "terminated (SIGTERM)"),
    (signal.SIGINT, 130, "interrupted (SIGINT)"),
])
def test_stdio_server_with_a_call_in_flight(
    tmp_path: Path, signum: int, status: int, reason: str,
) -> None:
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen([*MCPACTOR, "run", RACE_SERVER, "--trace", str(trace)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "sleepy", "arguments": {"seconds": 60}}})
    time.sleep(0.5)
    started = time.monotonic()
    proc.send_signal(signum)
    assert proc.wait(timeout=20) == status
    assert time.monotonic() - started < 10
    events = _lines(trace)[1:]
    assert events[-1]["kind"] == "session_closed"
    assert events[-1]["reason"] == reason
    [applied] = [e for e in events if e["kind"] == "cancel_applied"]
    assert applied["why"] == reason and applied["id"] == 1
    done = _replays(trace)
    assert done.returncode == 0, done.stdout + done.stderr


def test_http_server_with_open_sessions(
    tmp_path: Path, http_server: Callable[..., tuple[subprocess.Popen[bytes], str]],
) -> None:
    traces = tmp_path / "traces"
    proc, url = http_server(RACE_SERVER, "--trace", f"{traces}/")

    async def sessions() -> list[str]:
        outcomes: list[str] = []

        async def idle(task_status: trio.TaskStatus[None]) -> None:
            async with connect_http(url, mode="legacy") as client:
                await client.call_tool("quick")
                task_status.started()
                await trio.sleep_forever()

        failed = trio.Event()

        async def busy(task_status: trio.TaskStatus[None]) -> None:
            try:
                async with connect_http(url, mode="legacy") as client:
                    task_status.started()
                    await client.call_tool("sleepy", {"seconds": 60})
            except Exception as exc:  # the server went away mid-call
                outcomes.append(f"{type(exc).__name__}: {exc}")
                failed.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(idle)
            await nursery.start(busy)
            await trio.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            with trio.fail_after(20):
                await trio.to_thread.run_sync(lambda: proc.wait(timeout=20))
            with trio.move_on_after(5):
                await failed.wait()
            nursery.cancel_scope.cancel()
        return outcomes

    outcomes = trio.run(sessions)
    assert proc.returncode == 0
    # The call in flight fails with a clear error instead of hanging.
    assert len(outcomes) == 1 and ("ended" in outcomes[0] or "closed" in outcomes[0]), outcomes
    recorded = sorted(traces.glob("*.jsonl"))
    assert len(recorded) == 2
    for trace in recorded:
        events = _lines(trace)[1:]
        assert events[-1]["kind"] == "session_closed", trace
        assert events[-1]["reason"] == "terminated (SIGTERM)"
        done = _replays(trace)
        assert done.returncode == 0, done.stdout + done.stderr
