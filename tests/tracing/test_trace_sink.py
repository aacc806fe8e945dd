"""Writing traces out of the event loop's way: the trace sink process, the writer thread
and the in-memory writer write the same lines; the loop never waits for them; a sink
that stops or dies costs a visible gap, never a stall or the rest of the trace."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.lowlevel
import trio.testing

from mcpactor.tracing import REDACTED, MemoryRecorder, Recorder, Rotation, TraceHeader, sinkclient
from mcpactor.tracing.sinkclient import DEFAULT_WRITER, writer_mode
from mcpactor.tracing.tracer import EncodedMessage, pad

SECRET = "tok-8f2kQz91"


def _header() -> TraceHeader:
    return TraceHeader(role="server", transport="memory", entry_point="x:y",
                       seeds={"random": 2})


def _events(n: int = 700) -> list[tuple[Any, ...]]:
    """A bit of everything the encoder treats differently (times are filled in later)."""
    odd = object()  # one instance: its repr is the same for every writer
    return [
        ("s", "supervisor", "session_started", {"role": "server", "transport": "memory"}),
        ("s", "reader", "message_in",
         b'{"jsonrpc": "2.0", "id": 0, "method": "initialize",  "params": {}}', 1),
        ("s", "reader", "initialized", {"protocol_version": "2025-06-18",
                                        "peer_info": {"name": "c", "password": "pw"}}),
        ("s", "handler:1", "handler_started", 1, "tools/call"),
        ("s", "reader", "message_in",
         b'{"id":1,"params":{"arguments":{"token":"%s"}}}' % SECRET.encode(), 0),
        ("s", "writer", "message_out", EncodedMessage(b'{"id":1,"result":"echo %s"}'
                                                      % SECRET.encode()), 1, 1),
        ("s", "reader", "message_in", {"raw": 'not json "authorization": "Bearer abcdefghij"',
                                       "yields": 1}),
        ("s", "reader", "custom", {"obj": odd, "big": 2**70, "nested": {"m": [1.5, None]},
                                   "note": "with Bearer zzzzzzzzzz inside"}),
        *[("s", "writer", "message_out", b'{"i": %d}' % i, i, 1) for i in range(n)],
        ("s", "supervisor", "session_closed", {"reason": "eof"}),
    ]


def _record(rec: Recorder, events: list[tuple[Any, ...]]) -> None:
    async def main() -> None:
        async with rec.recording():
            for i, e in enumerate(events):
                rec.log(pad((rec.clock(), *e)))
                if i % 100 == 0:
                    await trio.lowlevel.checkpoint()

    trio.run(main, clock=trio.testing.MockClock())


def _body(lines: list[bytes]) -> list[dict[str, Any]]:
    # The records without the ones the loop's passes add (their number depends on them).
    out = [orjson.loads(x) for x in lines[1:]]
    return [{k: v for k, v in e.items() if k != "seq"} for e in out
            if e["kind"] not in ("sched", "read")]


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_every_writer_writes_the_in_memory_lines(tmp_path: Path, writer: str) -> None:
    events = _events()
    memory = MemoryRecorder(_header())
    _record(memory, events)
    rec = Recorder(_header(), tmp_path / "t.jsonl", writer=writer)
    _record(rec, events)
    assert rec.writer == writer
    lines = (tmp_path / "t.jsonl").read_bytes().splitlines()
    assert _body(lines) == _body(memory.lines())
    assert len(_body(lines)) == len(events)
    data = b"\n".join(lines)
    assert SECRET.encode() not in data and b"abcdefghij" not in data
    assert REDACTED.encode() in data


def test_the_writer_is_chosen_by_argument_then_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPACTOR_TRACE_WRITER", raising=False)
    assert writer_mode(None) == DEFAULT_WRITER == "process"
    monkeypatch.setenv("MCPACTOR_TRACE_WRITER", "thread")
    assert writer_mode(None) == "thread" and writer_mode("process") == "process"
    monkeypatch.setenv("MCPACTOR_TRACE_WRITER", "nonsense")
    assert writer_mode(None) == "process"  # a typo in the environment does not stop a server
    with pytest.raises(ValueError, match="trace writer"):
        writer_mode("disk")


def test_a_killed_sink_costs_a_marked_gap_and_the_recording_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rec = Recorder(_header(), path, writer="process")

    async def main() -> None:
        async with rec.recording():
            for i in range(3000):
                rec.log(pad((rec.clock(), "s", "writer", "message_out", b'{"i":%d}' % i, i, 1)))
                if i == 1000:
                    rec.handoff()
                    await trio.sleep(0.2)  # the sink has written the first thousand
                    sink = sinkclient._sink
                    assert sink is not None
                    os.kill(sink.proc.pid, signal.SIGKILL)
                    sink.proc.wait()
                if i % 100 == 0:
                    await trio.lowlevel.checkpoint()
            rec.log(pad((rec.clock(), "s", "reader", "custom", {"password": "after-the-death"})))

    trio.run(main)
    assert rec.writer == "thread"  # it fell back to a writer thread of this process
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert lines[0]["type"] == "header" and sum(1 for e in lines if e.get("type")) == 1
    out = [e["msg"]["i"] for e in lines if e.get("kind") == "message_out"]
    assert out[:1001] == list(range(1001)) and out[-1] == 2999
    seen = {e["seq"] for e in lines[1:] if "seq" in e}
    gaps = [e for e in lines if e.get("kind") == "trace_truncated"]
    # Whatever the dead sink never wrote is declared, exactly, where it is missing.
    for gap in gaps:
        missing = set(range(gap["first"], gap["first"] + gap["lost"]))
        assert not missing & seen
    assert len(seen) + sum(g["lost"] for g in gaps) == max(seen)
    assert b"after-the-death" not in path.read_bytes()


def test_a_stopped_sink_never_makes_the_loop_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink stops reading (SIGSTOP: a machine too busy to give it CPU): the session
    goes on at full speed; what does not fit the bounded backlog is dropped and the
    file says so; the rest arrives once the sink runs again."""
    monkeypatch.setattr(sinkclient, "MAX_BACKLOG_BYTES", 256 << 10)
    path = tmp_path / "t.jsonl"
    rec = Recorder(_header(), path, writer="process")
    worst = [0.0]

    async def main() -> None:
        async with rec.recording():
            rec.log(pad((rec.clock(), "s", "reader", "tick", {})))
            rec.handoff()
            sink = sinkclient._sink
            assert sink is not None
            os.kill(sink.proc.pid, signal.SIGSTOP)
            try:
                filler = b"x" * 2000
                for i in range(4000):
                    began = time.perf_counter()
                    blob = b'{"pad":"%s","i":%d}' % (filler, i)  # each its own bytes
                    rec.log(pad((rec.clock(), "s", "writer", "message_out", blob, i, 1)))
                    if i % 50 == 0:
                        rec.handoff()
                        await trio.lowlevel.checkpoint()
                    worst[0] = max(worst[0], time.perf_counter() - began)
            finally:
                os.kill(sink.proc.pid, signal.SIGCONT)
            rec.log(pad((rec.clock(), "s", "writer", "message_out", b'{"last":1}', None, 1)))

    trio.run(main)
    assert worst[0] < 0.05, worst
    assert rec.lost > 0
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    gaps = [e for e in lines if e.get("kind") == "trace_truncated"]
    assert gaps and sum(g["lost"] for g in gaps) == rec.lost
    assert lines[-1]["msg"] == {"last": 1}


def test_one_file_per_session_keeps_each_sessions_schedule(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    rec = Recorder(_header(), folder, split=True)

    async def main() -> None:
        async with rec.recording():
            for i in range(30):
                sid = f"s{i % 3}"
                rec.log(pad((0, None, None, "sched", 10.0 + i, (1 + i % 3,),
                             (1 + i % 3, None, sid) if i < 3 else None)))
                rec.log(pad((rec.clock(), sid, "reader", "tick", {"i": i})))
            rec.session_closed("s0")

    trio.run(main)
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["s0.jsonl", "s1.jsonl", "s2.jsonl"]
    for n, name in enumerate(files):
        lines = [orjson.loads(x) for x in (folder / name).read_bytes().splitlines()]
        assert lines[0]["scope"] == "session" and lines[0]["session"] == f"s{n}"
        body = lines[1:]
        assert [e["seq"] for e in body] == list(range(1, len(body) + 1))
        assert {e["session"] for e in body if e["kind"] == "tick"} == {f"s{n}"}
        assert all(e["run"] == [1 + n] for e in body if e["kind"] == "sched")
        assert len([e for e in body if e["kind"] == "tick"]) == 10


def test_a_whole_process_trace_rotates_into_segments_named_by_time(tmp_path: Path) -> None:
    rec = Recorder(_header(), tmp_path / "server.jsonl", rotation=Rotation(max_bytes=20_000))
    _record(rec, _events(1500))
    segments = sorted(tmp_path.glob("server-*.jsonl"))
    assert len(segments) >= 3
    previous = None
    seqs: list[int] = []
    for n, segment in enumerate(segments, start=1):
        lines = [orjson.loads(x) for x in segment.read_bytes().splitlines()]
        assert lines[0]["segment"] == n and lines[0]["previous"] == previous
        previous = segment.name
        seqs += [e["seq"] for e in lines[1:]]
    assert seqs == list(range(1, len(seqs) + 1))  # numbering runs on across segments


def test_the_sink_ends_when_its_recording_process_does(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "t.jsonl"
    code = (
        "import os, trio\n"
        "from mcpactor.tracing import Recorder, TraceHeader\n"
        "from mcpactor.tracing.tracer import pad\n"
        "from mcpactor.tracing import sinkclient\n"
        f"rec = Recorder(TraceHeader(role='server', transport='x'), {str(path)!r})\n"
        "async def main():\n"
        "    rec.start()\n"
        "    for i in range(500): rec.log(pad((rec.clock(), 's', 'reader', 'tick', {'i': i})))\n"
        "    rec.close()\n"  # no waiting: the process's exit does
        "    print(sinkclient._sink.proc.pid, flush=True)\n"
        "trio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    pid = int(done.stdout.split()[0])
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert len([e for e in lines if e.get("kind") == "tick"]) == 500
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
