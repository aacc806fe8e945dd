"""Plain ``def`` tools run in worker threads (in a server with a lifespan, which the
replay enters as the recording did); a recording of them replays exactly: how
each wait for a thread ended and the thread's reads of the clocks and entropy come
from the trace. A request cancelled while its thread runs waits for the thread (a
thread cannot be stopped), then sends nothing: replayed the same way."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
import trio
from replay_support import assert_replays_as_recorded, run_cli

from mcpactor import RequestTimeout, connect_stdio

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'sync_tools_server.py'}:server"
MCPACTOR = [sys.executable, "-m", "mcpactor"]


async def _drive(trace: Path) -> list[str]:
    got: list[str] = []
    async with connect_stdio([*MCPACTOR, "run", SERVER, "--trace", str(trace)]) as client:

        async def call(tool: str, args: dict[str, int], timeout: float | None = None) -> None:
            try:
                result = await client.call_tool(tool, args, timeout=timeout)
                got.append(result.content[0].text)  # type: ignore[union-attr]
            except RequestTimeout:
                got.append("timeout")

        async with trio.open_nursery() as nursery:
            for i, ms in enumerate((30, 5, 20, 1, 15, 40)):
                nursery.start_soon(call, "crunch", {"ms": ms})
                nursery.start_soon(call, "inline", {"n": i})
            for i in range(2):
                nursery.start_soon(call, "handed", {"n": i})
            # Timeouts that fire while the thread still runs: the waits end cancelled.
            nursery.start_soon(call, "crunch", {"ms": 300}, 0.05)
            nursery.start_soon(call, "crunch", {"ms": 250}, 0.03)
        greeting = await client.call_tool("greet", {})
        got.append(greeting.content[0].text)  # type: ignore[union-attr]
    return got


def test_a_recording_of_sync_tools_in_threads_replays_exactly(tmp_path: Path) -> None:
    trace = tmp_path / "threads.jsonl"
    got = trio.run(_drive, trace)
    assert got.count("timeout") == 2 and len(got) == 17
    assert got[-1] == "hello from the lifespan"  # the replay enters the lifespan too
    lines = trace.read_bytes().splitlines()
    recorded = [orjson.loads(x) for x in lines]
    # Each wait for a worker thread is in the trace, with the thread's clock readings.
    threads = [r for r in recorded if r.get("kind") == "read" and r.get("src") == "thread"]
    assert len(threads) == 14 and {r["v"] for r in threads} == {"done"}
    # What a function handed over as it is read in its thread is the task's.
    assert sum(r.get("kind") == "read" and r.get("src") == "urandom" for r in recorded) >= 4
    assert any(r.get("kind") == "read" and r.get("src") == "time" for r in recorded)
    cancelled = [r for r in recorded if r.get("kind") == "cancel_requested"]
    assert len(cancelled) == 2
    # The same answers, bytes for bytes (clock and entropy read in the threads too).
    assert_replays_as_recorded(trace, range(1, 19), times=2)



async def _crowd(trace: Path, calls: int) -> list[str]:
    """``calls`` thread waits at once on a limiter of three tokens: which wait gets a
    token when depends on when the other threads end."""
    got: list[str] = []
    async with connect_stdio([*MCPACTOR, "run", SERVER, "--trace", str(trace)]) as client:

        async def call(ms: int) -> None:
            result = await client.call_tool("queued", {"ms": ms})
            got.append(result.content[0].text)  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for i in range(calls):
                nursery.start_soon(call, 1 + i % 4)
    return got


def test_more_thread_waits_than_tokens_replay_exactly(tmp_path: Path) -> None:
    trace = tmp_path / "crowd.jsonl"
    got = trio.run(_crowd, trace, 24)
    assert len(got) == 24
    lines = trace.read_bytes().splitlines()
    recorded = [orjson.loads(x) for x in lines]
    outcomes = [r["v"] for r in recorded if r.get("kind") == "read" and r.get("src") == "thread"]
    # Each wait says whether it first waited for a token (the replay grants it then, not
    # when a thread of the replay happens to end).
    assert len(outcomes) == 48 and sum(v == "queued:done" for v in outcomes) >= 10
    assert_replays_as_recorded(trace, range(1, 26), times=3)


async def _gate(trace: Path) -> list[str]:
    got: list[str] = []
    async with connect_stdio([*MCPACTOR, "run", SERVER, "--trace", str(trace)]) as client:

        async def call(tool: str, args: dict[str, int]) -> None:
            result = await client.call_tool(tool, args)
            got.append(result.content[0].text)  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "hold", {"ms": 300})
            await trio.sleep(0.05)
            nursery.start_soon(call, "try_for", {"ms": 30})
    return got


def test_a_wait_given_up_while_queued_for_a_token_replays_and_never_hangs(
        tmp_path: Path) -> None:
    trace = tmp_path / "gate.jsonl"
    got = trio.run(_gate, trace)
    assert sorted(got) == ["gave up", "held 300"]
    text = trace.read_bytes()
    assert b'"src":"thread","v":"queued:withdrawn"' in text  # cancelled before its token
    code, stdout, stderr = run_cli("replay", str(trace))
    assert code == 0 and "faithful" in stdout, (stdout, stderr)
    # A trace that does not say the wait was queued (as an older recording): the replay
    # cannot know the token was not free, but it ends (a verdict), never waits forever on
    # a thread that can only end when its cancelled wait lets it.
    old = tmp_path / "old.jsonl"
    old.write_bytes(text.replace(b'"v":"queued:', b'"v":"'))
    started = time.monotonic()
    code, stdout, stderr = run_cli("replay", str(old))
    assert code in (0, 1) and time.monotonic() - started < 30, (stdout, stderr)
