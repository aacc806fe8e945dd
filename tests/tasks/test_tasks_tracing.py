"""A task's lifecycle in traces: recorded on the session that created it, its worker
followed as that handler's child, and replayed exactly, also when the task outlives
its session (a whole-process trace; a per-session file, which the task's late records
are appended to rather than begun again)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import trio
import trio.testing
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import Recorder, TraceHeader

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traces"))
from peer import drain, peer_pair

HERE = Path(__file__).resolve().parent
ENTRY = f"{HERE / 'task_server.py'}:server"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


async def _outlived(recorder: Recorder) -> str:
    """A client creates a task and leaves at once; the recording goes on until the
    task has finished. Returns the task id."""
    server = load_entry_point(ENTRY)  # a fresh module, as the replay loads it
    async with recorder.recording(), trio.open_nursery() as nursery:
        transport, peer = peer_pair()
        session = server.new_session(transport, tracer=recorder, session_id="first")
        nursery.start_soon(session.run)
        await peer.request(0, "initialize", {"protocolVersion": "2025-11-25",
                                             "capabilities": {},
                                             "clientInfo": {"name": "p", "version": "1"}})
        await peer.until(rid=0)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await peer.request(1, "tools/call", {"name": "slow", "arguments": {"n": 3, "delay": 0.5},
                                             "task": {"ttl": 60000}})
        task_id: str = (await peer.until(rid=1))["result"]["task"]["taskId"]
        peer.close()
        await drain(peer)
        running = server.task_runtime.running(task_id)
        assert running is not None
        await running.done.wait()
    return task_id


def test_whole_process_trace_of_a_task_that_outlives_its_session(tmp_path: Path) -> None:
    path = tmp_path / "server.jsonl"
    header = TraceHeader(role="server", transport="memory", entry_point=ENTRY)
    task_id = trio.run(_outlived, Recorder(header, path),
                       clock=trio.testing.MockClock(autojump_threshold=0))
    lines = _lines(path)[1:]
    events = [e for e in lines if e.get("actor") == f"task:{task_id}"]
    assert [e["kind"] for e in events] == ["task_created"] + ["task_status"] * 3 + [
        "task_finished"]
    assert events[-1]["outcome"] == "completed" and events[-1]["t"] == 1.5
    closed = next(e for e in lines if e.get("kind") == "session_closed")
    assert events[1]["seq"] < closed["seq"] < events[2]["seq"]  # it went on afterwards
    trace = load_trace(path)
    result = replay(trace)
    assert result.divergence is None, result.divergence
    assert result.reproduced == len(trace.events)
    replayed = [e for e in map(orjson.loads, result.output[1:])
                if e.get("actor") == f"task:{task_id}"]
    assert [e["kind"] for e in replayed] == [e["kind"] for e in events]


def test_per_session_file_keeps_a_tasks_late_records(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    header = TraceHeader(role="server", transport="memory", entry_point=ENTRY)
    task_id = trio.run(_outlived, Recorder(header, folder, split=True),
                       clock=trio.testing.MockClock(autojump_threshold=0))
    first = _lines(folder / "first.jsonl")
    assert first[0]["type"] == "header" and first[0]["session"] == "first"
    assert sum(1 for line in first if line.get("type") == "header") == 1
    kinds = [e["kind"] for e in first[1:]]
    assert kinds.index("session_closed") < kinds.index("task_finished")
    assert [e["seq"] for e in first[1:]] == list(range(1, len(first)))
    finished = next(e for e in first if e.get("kind") == "task_finished")
    assert finished["task"] == task_id and finished["outcome"] == "completed"


async def _collected(recorder: Recorder) -> str:
    """A client creates a task and leaves; another session, later, waits for its
    result (``tasks/result``). Returns the task id."""
    server = load_entry_point(ENTRY)
    init = {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "p", "version": "1"}}
    async with recorder.recording(), trio.open_nursery() as nursery:
        transport, first = peer_pair()
        session = server.new_session(transport, tracer=recorder, session_id="first")
        nursery.start_soon(session.run)
        await first.request(0, "initialize", init)
        await first.until(rid=0)
        await first.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await first.request(1, "tools/call", {"name": "slow",
                                              "arguments": {"n": 3, "delay": 0.5}, "task": {}})
        task_id: str = (await first.until(rid=1))["result"]["task"]["taskId"]
        first.close()
        await drain(first)
        await session.closed.wait()
        transport, second = peer_pair()
        nursery.start_soon(lambda: server.serve(transport, tracer=recorder,
                                                session_id="second"))
        await second.request(0, "initialize", init)
        await second.until(rid=0)
        await second.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await second.request(1, "tasks/result", {"taskId": task_id})
        answer = await second.until(rid=1)
        assert answer["result"]["content"][0]["text"] == "counted to 3"
        second.close()
        await drain(second)
    return task_id


def test_whole_process_trace_of_a_task_collected_by_a_later_session(tmp_path: Path) -> None:
    path = tmp_path / "server.jsonl"
    header = TraceHeader(role="server", transport="memory", entry_point=ENTRY)
    task_id = trio.run(_collected, Recorder(header, path),
                       clock=trio.testing.MockClock(autojump_threshold=0))
    lines = _lines(path)[1:]
    finished = next(e for e in lines if e.get("kind") == "task_finished")
    assert finished["task"] == task_id and finished["session"] == "first"
    result_out = next(e for e in lines if e.get("kind") == "message_out"
                      and e["session"] == "second" and e["msg"].get("id") == 1)
    assert finished["seq"] < result_out["seq"]
    trace = load_trace(path)
    result = replay(trace)
    assert result.divergence is None, result.divergence
    assert result.reproduced == len(trace.events)
