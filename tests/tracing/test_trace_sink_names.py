"""A long recording: the trace sink names every task from its parent's name, and
forgets the names of tasks that have ended (the recording's task table tells it when it
sweeps), so what it keeps stays bounded however many requests a process serves; tasks
spawned after a sweep are still named right, and the trace replays."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import trio
import trio.testing
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import MemoryRecorder, Recorder, TraceHeader
from mcpactor.tracing.tasks import SWEEP_SLACK

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traces"))
from peer import drain, peer_pair

HERE = Path(__file__).resolve().parent
ENTRY = f"{HERE / 'spawny_server.py'}:server"
CALLS = 400  # three tasks a call: past the table's sweep threshold


async def _serve(recorder: Recorder) -> int:
    server = load_entry_point(ENTRY)
    async with recorder.recording(), trio.open_nursery() as nursery:
        transport, peer = peer_pair()
        session = server.new_session(transport, tracer=recorder, session_id="long")
        nursery.start_soon(session.run)
        await peer.initialize()
        for i in range(CALLS):
            await peer.call(i + 1, "fan", {"n": i})
            answer = await peer.until(rid=i + 1)
            assert answer["result"]["content"][0]["text"] in (f"a{i},b{i}", f"b{i},a{i}")
        kept = len(recorder._output.core._names)  # type: ignore[union-attr]
        peer.close()
        await drain(peer)
    return kept


def test_the_sink_forgets_ended_tasks_and_the_trace_still_replays(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    header = TraceHeader(role="server", transport="memory", entry_point=ENTRY)
    recorder = MemoryRecorder(header)
    kept = trio.run(_serve, recorder, clock=trio.testing.MockClock(autojump_threshold=0))
    path.write_bytes(b"".join(line + b"\n" for line in recorder.lines()))
    assert 3 * CALLS > SWEEP_SLACK + 128
    # Those of the tasks named since the sweep, not one per task ever spawned.
    assert kept <= 3 * CALLS - SWEEP_SLACK + 64, kept
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    named = [name for r in records if r.get("kind") == "sched"
             for name in (r.get("new") or {}).values()]
    assert len(named) == len(set(named))
    # Every task got its whole name, also those spawned after the sweeps: the last call's
    # handler and its two children, under the session's supervisor.
    assert not any("#" in name for name in named)
    assert named[-3].startswith("long/") and named[-1] == f"{named[-3]}/2"
    trace = load_trace(path)
    result = replay(trace)
    assert result.divergence is None, result.divergence
