"""The recorder: the format's header, events and schedule records, redaction, writers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.lowlevel
import trio.testing
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace
from replay_support import RACE_SERVER

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import REDACTED, MemoryRecorder, Recorder, Redactor, TraceHeader
from mcpactor.tracing.tracer import EncodedMessage, pad

SECRET = "s3cr3t-Xq9"


async def _session(path: Path, script: list[bytes], recorder_kw: dict[str, Any]) -> None:
    from mcpactor.transports.memory import MemoryTransport

    server = load_entry_point(RACE_SERVER)
    to_server, server_in = trio.open_memory_channel[bytes](100)
    server_out, from_server = trio.open_memory_channel[bytes](100)
    header = TraceHeader(role="server", transport="memory", entry_point=RACE_SERVER)
    recorder = Recorder(header, path, **recorder_kw)
    async with recorder.recording(), trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(MemoryTransport(server_out, server_in),
                                                tracer=recorder))
        for line in script:
            to_server.send_nowait(line)
            await trio.sleep(0.01)
        await trio.sleep(0.5)
        to_server.close()
        async for _ in from_server:
            pass


def _msg(obj: Any) -> bytes:
    return orjson.dumps(obj)


INIT = [
    _msg({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    _msg({"jsonrpc": "2.0", "method": "notifications/initialized"}),
]


def _record(path: Path, script: list[bytes], **kw: Any) -> None:
    trio.run(_session, path, [*INIT, *script], kw,
             clock=trio.testing.MockClock(autojump_threshold=0))


def test_header_and_events_follow_the_format(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _record(path, [_msg({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "quick", "arguments": {}}})])
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    header, records = lines[0], lines[1:]
    assert header["type"] == "header" and header["format"] == "mcpactor-trace"
    assert header["format_version"] == 2 and header["scope"] == "process"
    assert header["entry_point"] == RACE_SERVER and header["role"] == "server"
    assert set(header["seeds"]) == {"random"}
    assert header["clock"]["kind"] == "virtual" and header["clock"]["origin"] == 0.0
    assert "authorization" in header["redacted_keys"]
    assert [e["seq"] for e in records] == list(range(1, len(records) + 1))
    # The schedule: every pass of the loop that ran a followed task, the tasks named
    # when first seen; the session's events between them.
    scheds = [e for e in records if e["kind"] == "sched"]
    named = {int(k): v for e in scheds for k, v in e.get("new", {}).items()}
    assert scheds and all(set(e["run"]) <= set(named) for e in scheds)
    sid = next(e["session"] for e in records if e["kind"] == "session_started")
    assert named[min(named)] == sid and all(v.startswith(sid) for v in named.values())
    events = [e for e in records if e["kind"] not in ("sched", "read")]
    assert all({"seq", "t", "session", "actor", "kind"} <= set(e) for e in events)
    assert [e["protocol_version"] for e in events if e["kind"] == "initialized"] == ["2025-06-18"]
    kinds = [e["kind"] for e in events]
    for kind in ("session_started", "transport_opened", "message_in", "initialized",
                 "handler_started", "handler_finished", "message_out", "transport_closed",
                 "session_closed"):
        assert kind in kinds, kind
    out = [e for e in events if e["kind"] == "message_out"]
    assert out[-1]["msg"]["id"] == 1 and out[-1]["related"] == 1


def _times(path: Path) -> list[bytes]:
    import re

    return re.findall(rb'"t":([^,]+),', b"\n".join(path.read_bytes().splitlines()[1:]))


def test_event_times_are_whole_nanoseconds_in_at_most_nine_decimals(tmp_path: Path) -> None:
    # A virtual clock: 0.25 s of sleep shows as such, not as a float's last bits.
    path = tmp_path / "virtual.jsonl"
    _record(path, [_msg({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "slow", "arguments": {"steps": 1, "every": 0.25}}})])
    times = _times(path)
    assert times and all(len(t.partition(b".")[2]) <= 9 for t in times), times
    assert max(map(float, times)) >= 0.25
    # Trio's own clock, read in nanoseconds by the recorder: still nine decimals at most,
    # and never running backwards.
    path = tmp_path / "real.jsonl"

    async def main() -> None:
        rec = Recorder(TraceHeader(role="server", transport="x"), path)
        async with rec.recording():
            for i in range(300):
                rec.log(pad((rec.clock(), "s", "reader", "tick", {"i": i})))
                if i % 50 == 0:
                    await trio.sleep(0.001)

    trio.run(main)
    times = _times(path)
    assert len(times) == 300 and all(len(t.partition(b".")[2]) <= 9 for t in times)
    values = list(map(float, times))
    assert values == sorted(values) and values[-1] >= 0.006


def test_recording_with_trios_own_clock_does_not_import_trio_testing(tmp_path: Path) -> None:
    # trio.testing pulls in pytest: a quarter of a second on every traced server's start.
    import subprocess
    import sys

    code = (
        "import sys, trio\n"
        "from mcpactor.tracing import Recorder, TraceHeader\n"
        "from mcpactor.tracing.tracer import pad\n"
        "async def main():\n"
        f"    r = Recorder(TraceHeader(role='server', transport='x'), {str(tmp_path / 'x.jsonl')!r})\n"
        "    async with r.recording():\n"
        "        r.log(pad((r.clock(), 's', 'reader', 'tick', {})))\n"
        "trio.run(main)\n"
        "assert 'trio.testing' not in sys.modules, 'imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    header = orjson.loads((tmp_path / "x.jsonl").read_bytes().splitlines()[0])
    assert header["clock"]["kind"] == "monotonic"


def test_secrets_never_reach_the_trace_file_and_the_redaction_shows(tmp_path: Path) -> None:
    path = tmp_path / "secret.jsonl"
    _record(
        path,
        [
            _msg({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "echo_secret", "arguments": {"token": SECRET},
                "_meta": {"Authorization": f"Bearer {SECRET}", "ssn": SECRET,
                          "note": f"header was Bearer {SECRET}"}}}),
            b'{"jsonrpc": "2.0", "id": 2, "password": "' + SECRET.encode() + b'", broken',
        ],
        redact_keys=frozenset({"ssn"}),
    )
    data = path.read_bytes()
    assert SECRET.encode() not in data
    header = orjson.loads(data.splitlines()[0])
    assert "ssn" in header["redacted_keys"] and "token" in header["redacted_keys"]
    events = [orjson.loads(x) for x in data.splitlines()[1:]]
    call = next(e for e in events if e["kind"] == "message_in" and "msg" in e
                and e["msg"].get("id") == 1)
    params = call["msg"]["params"]
    assert params["arguments"]["token"] == REDACTED
    assert params["_meta"]["Authorization"] == REDACTED and params["_meta"]["ssn"] == REDACTED
    assert params["_meta"]["note"] == f"header was Bearer {REDACTED}"
    raw = next(e for e in events if e["kind"] == "message_in" and "raw" in e)
    assert REDACTED in raw["raw"]
    answer = next(e for e in events if e["kind"] == "message_out" and e["msg"].get("id") == 1)
    assert answer["msg"]["result"]["content"][0]["text"] == "your token is <redacted>"
    # The replay redacts its own output the same way, so it still matches.
    assert replay(load_trace(path)).faithful


def test_keys_that_merely_contain_a_secret_word_are_kept() -> None:
    r = Redactor()
    value, changed = r.redact({"progressToken": "p1", "X-Api-Key": "k", "api_key": "k",
                               "tokens": 3, "nested": [{"Client_Secret": "c"}]})
    assert changed
    assert value["progressToken"] == "p1" and value["tokens"] == 3
    assert value["X-Api-Key"] == value["api_key"] == REDACTED
    assert value["nested"][0]["Client_Secret"] == REDACTED
    assert not r.might_hold_secret(b'{"progressToken":"p1"}')
    assert r.might_hold_secret(b'{"ACCESS_TOKEN": "x"}')


def test_memory_recorder_redacts_and_never_raises_on_odd_data() -> None:
    async def main() -> list[dict[str, Any]]:
        rec = MemoryRecorder()
        async with rec.recording():
            rec.log(pad((rec.clock(), "s", "reader", "message_in",
                     EncodedMessage(b'{"token":"abc"}'), 1)))
            rec.log(pad((rec.clock(), "s", "reader", "custom", {"obj": object(), "password": "pw"})))
        return [e for e in rec.events() if e["kind"] not in ("sched", "read")]

    events = trio.run(main)
    assert events[0]["msg"] == {"token": REDACTED}
    assert events[1]["password"] == REDACTED and events[1]["obj"].startswith("<object")


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_a_file_recording_writes_everything_and_its_end_waits_for_it(
        tmp_path: Path, writer: str) -> None:
    path = tmp_path / "many.jsonl"

    async def main() -> None:
        rec = Recorder(TraceHeader(role="server", transport="x"), path, writer=writer)
        async with rec.recording():
            for i in range(5000):
                rec.log(pad((rec.clock(), "s", "writer", "message_out",
                         EncodedMessage(b'{"i":%d}' % i), None, 1)))
                if i % 1000 == 0:
                    await trio.lowlevel.checkpoint()
        assert rec.writer == writer and rec.lost == 0
        rec.log(pad((rec.clock(), "s", "writer", "late", {})))  # ignored after the end

    trio.run(main)
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    out = [e for e in lines[1:] if e["kind"] == "message_out"]
    assert len(out) == 5000 and out[-1]["msg"] == {"i": 4999}
    assert not any(e["kind"] == "late" for e in lines[1:])


def test_client_side_traces_record_progress_timers_and_local_cancellations() -> None:
    from mcpactor import RequestTimeout, connect_transport
    from mcpactor.transports.memory import memory_pair

    rec = MemoryRecorder(TraceHeader(role="client", transport="memory"))

    async def main() -> None:
        server = load_entry_point(RACE_SERVER)
        a, b = memory_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: server.serve(a))
            async with connect_transport(b, tracer=rec) as client:
                await client.call_tool("slow", {"steps": 2, "every": 0.1},
                                       on_progress=lambda p, t, m: None)
                try:
                    await client.call_tool("sleepy", {"seconds": 5}, timeout=1)
                except RequestTimeout:
                    pass

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    events = rec.events()
    progress = [e for e in events if e["kind"] == "progress"]
    assert [(e["direction"], e["progress"]) for e in progress] == [("in", 0), ("in", 1)]
    kinds = [e["kind"] for e in events]
    assert "timer_set" in kinds and "timer_fired" in kinds
    [cancel] = [e for e in events if e["kind"] == "cancel_requested"]
    assert cancel["by"] == "local" and cancel["reason"] == "timeout"
    # Times are virtual: 0.2 s of progress steps, then the 1 s timeout.
    assert [e["t"] for e in events if e["kind"] == "timer_fired"] == [1.2]


def test_handlers_using_random_replay_with_the_recorded_seed(tmp_path: Path) -> None:
    path = tmp_path / "dice.jsonl"
    calls = [_msg({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "roll", "arguments": {"sides": 1000000}}})
             for i in range(1, 6)]
    _record(path, calls)
    rolls = [e["msg"]["result"]["structuredContent"]["result"]
             for e in map(orjson.loads, path.read_bytes().splitlines()[1:])
             if e["kind"] == "message_out" and "result" in e["msg"] and e["msg"]["id"] != 0]
    assert len(set(rolls)) == 5
    result = replay(load_trace(path))
    assert result.faithful, result.divergence  # the same five numbers came up again
    # Each request's handler draws from a stream of its own: the rolls do not depend on
    # how the handlers interleaved.
    names = [v for e in map(orjson.loads, path.read_bytes().splitlines()[1:])
             if e["kind"] == "sched" for v in e.get("new", {}).values()]
    assert len(names) == len(set(names))
