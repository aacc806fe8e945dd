"""A recording survives what goes wrong while it is written: a record that cannot be
encoded, chunks dropped because the writer fell behind, writes that fail (a full disk).
Each costs the records it touched, declared by ``trace_truncated`` records where they
are missing; the files stay line-complete and numbered as a reader expects; the
recording goes on and ends on time."""

from __future__ import annotations

import errno
import io
import marshal
import time
from pathlib import Path
from typing import IO, Any

import orjson
import pytest
import trio
import trio.lowlevel
from mcpactor.replay.trace import parse_trace

from mcpactor.tracing import Recorder, TraceHeader, sinkclient
from mcpactor.tracing.sink import FRAME, OP_CHUNK, OP_END, OP_OPEN, SinkCore, serve
from mcpactor.tracing.sinkclient import DRAIN_TIMEOUT
from mcpactor.tracing.tracer import pad


def _header() -> TraceHeader:
    return TraceHeader(role="server", transport="memory", entry_point="x:y",
                       seeds={"random": 2})


def _spec(path: Path, split: bool = False) -> dict[str, Any]:
    return {"path": str(path), "split": split, "origin": 0,
            "header": {"type": "header", "format": "mcpactor-trace", "format_version": 2}}


def _flat(*events: tuple[Any, ...]) -> list[Any]:
    return [x for e in events for x in pad(e)]


def _tick(sid: str, i: int) -> tuple[Any, ...]:
    return (i, sid, "reader", "tick", {"i": i})


def _named(tid: int, sid: str) -> tuple[Any, ...]:
    # The schedule's record of a pass that names a session's supervisor task.
    return (0, None, None, "sched", 1.0, (tid,), (tid, None, sid))


def _lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")  # line-complete
    return [orjson.loads(x) for x in data.splitlines()]


def _readable(path: Path) -> None:
    # The numbering and every gap are as a trace reader requires.
    parse_trace(path.read_bytes(), path, require_end=False)


def _deep(depth: int = 300) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- a record that cannot be encoded ---------------------------------------------------


def test_a_record_that_cannot_be_encoded_costs_itself_only(tmp_path: Path) -> None:
    said: list[str] = []
    path = tmp_path / "t.jsonl"
    core = SinkCore(_spec(path), report=said.append)
    core.chunk(1, _flat(_tick("s", 1), (2, "s", "reader", "odd", {"v": _deep()}),
                        _tick("s", 3)))
    core.chunk(4, _flat(_tick("s", 4), (5, "s", "reader", "odd", {"v": _deep()})))
    core.chunk(6, _flat(_tick("s", 6)))
    core.close()
    lines = _lines(path)
    assert [(e.get("seq"), e["kind"]) for e in lines[1:]] == [
        (1, "tick"), (None, "trace_truncated"), (3, "tick"), (4, "tick"),
        (None, "trace_truncated"), (6, "tick")]
    gaps = [e for e in lines if e.get("kind") == "trace_truncated"]
    assert [(g["first"], g["lost"]) for g in gaps] == [(2, 1), (5, 1)]
    assert "record 2 could not be encoded" in gaps[0]["reason"]
    assert len(said) == 2 and all("could not be encoded" in s for s in said)
    _readable(path)


def test_a_record_that_cannot_be_encoded_in_a_session_file(tmp_path: Path) -> None:
    core = SinkCore(_spec(tmp_path, split=True), report=lambda _: None)
    core.chunk(1, _flat(_named(1, "s"), _tick("s", 2), (3, "s", "reader", "odd",
                                                        {"v": _deep()}), _tick("s", 4)))
    core.session_closed("s")
    lines = _lines(tmp_path / "s.jsonl")
    assert [(e.get("seq"), e["kind"]) for e in lines[1:]] == [
        (1, "sched"), (2, "tick"), (None, "trace_truncated"), (4, "tick")]
    _readable(tmp_path / "s.jsonl")


def test_a_failing_chunk_does_not_stop_the_recording_and_its_end_is_answered(
        tmp_path: Path) -> None:
    """The sink process: one chunk it cannot take (here: not whole records) is declared
    lost, and the recording's later chunks are written; a channel that could not even
    open still answers its end, so nothing waits for it until a timeout."""
    path = tmp_path / "t.jsonl"

    def frame(op: bytes, channel: int, body: bytes) -> bytes:
        return FRAME.pack(op, channel, len(body)) + body

    stream = b"".join([
        frame(OP_OPEN, 1, orjson.dumps(_spec(path))),
        frame(OP_CHUNK, 1, marshal.dumps((1, _flat(_tick("s", 1))))),
        frame(OP_CHUNK, 1, marshal.dumps((2, _flat(_tick("s", 2))[:-1]))),  # 6 items
        frame(OP_CHUNK, 1, marshal.dumps((3, _flat(_tick("s", 3))))),
        frame(OP_OPEN, 2, b"not a spec"),
        frame(OP_CHUNK, 2, marshal.dumps((1, _flat(_tick("s", 1))))),
        frame(OP_END, 2, b""),
        frame(OP_END, 1, b""),
    ])
    err, out = io.StringIO(), io.BytesIO()
    serve(io.BytesIO(stream), err, out)
    assert out.getvalue() == b"E 2\nE 1\n"
    lines = _lines(path)
    assert [(e.get("seq"), e["kind"]) for e in lines[1:]] == [
        (1, "tick"), (None, "trace_truncated"), (3, "tick")]
    assert lines[2]["first"] == 2 and lines[2]["lost"] == 1
    assert "recording 1: ValueError" in err.getvalue()
    assert "recording 2: stopped" in err.getvalue()
    _readable(path)


# -- chunks dropped by a writer that fell behind, then the end --------------------------


@pytest.mark.parametrize("split", [False, True], ids=["whole-process", "per-session"])
def test_chunks_dropped_then_the_end_of_the_recording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: bool) -> None:
    """The sink's backlog overflows (every chunk dropped, as when the trace's reader
    stalls), and the recording ends with nothing more to write: its last chunk is
    nothing but the record of the gap. That record (no seq) stopped the sink with
    KeyError 'seq', lost the end of the file and made the end wait DRAIN_TIMEOUT; and
    records after a gap were numbered one too high."""
    path = tmp_path / ("sessions" if split else "t.jsonl")
    rec = Recorder(_header(), path, split=split, writer="process")
    ended: list[float] = []

    async def main() -> None:
        async with rec.recording():
            def log(kind: str, i: int) -> None:
                rec.log(pad((rec.clock(), "s", "reader", kind, {"i": i})))

            rec.log(pad((0, None, None, "sched", 1.0, (1,), (1, None, "s"))))
            for i in range(5):
                log("tick", i)
            rec.handoff()  # written
            monkeypatch.setattr(sinkclient, "MAX_BACKLOG_BYTES", -1)  # always over it
            for i in range(5, 9):
                log("tick", i)
            rec.handoff()  # dropped
            monkeypatch.setattr(sinkclient, "MAX_BACKLOG_BYTES", 64 << 20)
            for i in range(9, 12):
                log("tick", i)
            rec.handoff()  # written, after the record of the gap
            monkeypatch.setattr(sinkclient, "MAX_BACKLOG_BYTES", -1)
            log("session_closed", 12)
            rec.handoff()  # dropped: the end has nothing left but the gap
            await trio.lowlevel.checkpoint()
            ended.append(time.monotonic())
        ended.append(time.monotonic())

    trio.run(main)
    assert ended[1] - ended[0] < DRAIN_TIMEOUT / 2
    assert rec.lost == 5
    if not split:
        lines = _lines(path)
        body = [(e.get("seq"), e["kind"], e.get("i")) for e in lines[1:]]
        assert body == [(1, "sched", None), *[(2 + i, "tick", i) for i in range(5)],
                        (None, "trace_truncated", None),
                        *[(11 + i, "tick", 9 + i) for i in range(3)],
                        (None, "trace_truncated", None)]
        gaps = [(e["first"], e["lost"]) for e in lines if e.get("kind") == "trace_truncated"]
        assert gaps == [(7, 4), (14, 1)]
        _readable(path)
        return
    lines = _lines(path / "s.jsonl")
    body = [(e.get("seq"), e["kind"], e.get("i")) for e in lines[1:]]
    assert body == [(1, "sched", None), *[(2 + i, "tick", i) for i in range(5)],
                    (None, "trace_truncated", None),
                    *[(7 + i, "tick", 9 + i) for i in range(3)],
                    (None, "trace_truncated", None)]
    assert all(e["lost"] is None for e in lines if e.get("kind") == "trace_truncated")
    _readable(path / "s.jsonl")


def test_a_session_begun_while_records_were_dropped_says_its_start_is_missing(
        tmp_path: Path) -> None:
    core = SinkCore(_spec(tmp_path, split=True))
    core.chunk(1, _flat(_named(1, "a"), _tick("a", 2)))
    gap = (0, None, None, "trace_truncated", 3, 4, "the trace writer fell behind")
    # b's first steps were among the dropped records; c begins cleanly after them.
    core.chunk(7, _flat(gap, _tick("b", 7), _named(3, "c"), _tick("c", 9)))
    core.close()
    kinds = {sid: [(e.get("seq"), e["kind"], e.get("lost")) for e in
                   _lines(tmp_path / f"{sid}.jsonl")[1:]] for sid in "abc"}
    assert kinds["a"] == [(1, "sched", None), (2, "tick", None),
                          (None, "trace_truncated", None)]
    assert kinds["b"] == [(None, "trace_truncated", None), (1, "tick", None)]
    assert kinds["c"] == [(1, "sched", None), (2, "tick", None)]
    for sid in "abc":
        _readable(tmp_path / f"{sid}.jsonl")


# -- writes that fail (a full disk) -----------------------------------------------------


class _Disk:
    """Files that fail as a full disk does while ``full``: a write takes part of its
    data, then raises ENOSPC; opening a new file fails too when ``open_fails``."""

    def __init__(self) -> None:
        self.full = False
        self.open_fails = False

    def open(self, name: str) -> IO[bytes]:
        if self.full and self.open_fails:
            raise OSError(errno.ENOSPC, "No space left on device")
        return _FullableFile(self, open(name, "wb", buffering=0))  # type: ignore[return-value]


class _FullableFile:
    def __init__(self, disk: _Disk, raw: Any) -> None:
        self._disk, self._raw = disk, raw

    def write(self, data: Any) -> int:
        if self._disk.full:
            self._raw.write(bytes(data)[: len(data) // 2])  # a partial last line
            raise OSError(errno.ENOSPC, "No space left on device")
        return int(self._raw.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@pytest.mark.parametrize("open_fails", [False, True], ids=["writes-fail", "opens-fail"])
def test_a_full_disk_costs_what_could_not_be_written_and_recording_resumes(
        tmp_path: Path, open_fails: bool) -> None:
    """Once: one ENOSPC stopped the recording for the rest of the process, left a
    partial last line and files without their end. Now each file keeps whole lines,
    declares what it lacks once writing works again, and new sessions are recorded."""
    disk = _Disk()
    disk.open_fails = open_fails
    said: list[str] = []
    core = SinkCore(_spec(tmp_path, split=True), files=disk.open, report=said.append)
    core.chunk(1, _flat(_named(1, "a"), _tick("a", 2)))
    disk.full = True
    core.chunk(3, _flat(_tick("a", 3), _named(2, "b"), _tick("b", 5)))
    core.chunk(6, _flat(_tick("a", 6), _tick("b", 7)))
    core.session_closed("a")  # its end cannot be written now
    assert len(said) == 1 and "No space left on device" in said[0]
    disk.full = False
    core.chunk(8, _flat(_tick("b", 8), _named(3, "c"), _tick("c", 10)))
    core.session_closed("b")
    core.session_closed("c")
    core.close()
    assert len(said) == 2 and "works again" in said[1]
    files = {sid: _lines(tmp_path / f"{sid}.jsonl") for sid in "abc"}
    for sid, lines in files.items():
        assert lines[0]["type"] == "header" and lines[0]["session"] == sid
        _readable(tmp_path / f"{sid}.jsonl")
    a = [(e.get("seq"), e["kind"], e.get("lost")) for e in files["a"][1:]]
    assert a == [(1, "sched", None), (2, "tick", None), (None, "trace_truncated", 2)]
    b = [(e.get("seq"), e["kind"], e.get("lost")) for e in files["b"][1:]]
    assert b == [(None, "trace_truncated", 3), (4, "tick", None)]
    assert "No space left on device" in files["b"][1]["reason"]
    c = [(e.get("seq"), e["kind"]) for e in files["c"][1:]]
    assert c == [(1, "sched"), (2, "tick")]


def test_a_full_disk_under_a_whole_process_trace(tmp_path: Path) -> None:
    disk = _Disk()
    path = tmp_path / "t.jsonl"
    said: list[str] = []
    core = SinkCore(_spec(path), files=disk.open, report=said.append)
    core.chunk(1, _flat(_tick("s", 1), _tick("s", 2)))
    disk.full = True
    core.chunk(3, _flat(_tick("s", 3)))
    core.chunk(4, _flat(_tick("s", 4)))
    disk.full = False
    core.chunk(5, _flat(_tick("s", 5)))
    disk.full = True
    core.chunk(6, _flat(_tick("s", 6)))
    disk.full = False
    core.close()  # the end says what it lacks
    body = [(e.get("seq"), e["kind"], e.get("first"), e.get("lost")) for e in _lines(path)[1:]]
    assert body == [(1, "tick", None, None), (2, "tick", None, None),
                    (None, "trace_truncated", 3, 2), (5, "tick", None, None),
                    (None, "trace_truncated", 6, 1)]
    assert len(said) == 4  # each failure once, each recovery once
    _readable(path)

