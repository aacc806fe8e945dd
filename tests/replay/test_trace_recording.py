"""The recorder: the format's header and events, redaction, the background writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import trio
import trio.testing
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace
from replay_support import RACE_SERVER

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import REDACTED, JsonlRecorder, MemoryRecorder, Redactor, TraceHeader
from mcpactor.tracing.seeds import apply_seeds
from mcpactor.tracing.tracer import EncodedMessage

SECRET = "s3cr3t-Xq9"


async def _session(path: Path, script: list[bytes], recorder_kw: dict[str, Any]) -> None:
    from mcpactor.transports.memory import MemoryTransport

    server = load_entry_point(RACE_SERVER)
    to_server, server_in = trio.open_memory_channel[bytes](100)
    server_out, from_server = trio.open_memory_channel[bytes](100)
    header = TraceHeader(role="server", transport="memory", entry_point=RACE_SERVER)
    recorder = JsonlRecorder(path, header, **recorder_kw)
    async with trio.open_nursery() as nursery:
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
    header, events = lines[0], lines[1:]
    assert header["type"] == "header" and header["format"] == "mcpactor-trace"
    assert header["format_version"] == 1 and header["protocol_version"] == "2025-06-18"
    assert header["entry_point"] == RACE_SERVER and header["role"] == "server"
    assert set(header["seeds"]) == {"scheduler", "random"}
    assert header["clock"]["kind"] == "virtual" and header["clock"]["origin"] == 0.0
    assert "authorization" in header["redacted_keys"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all({"seq", "t", "session", "actor", "kind"} <= set(e) for e in events)
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
        rec = JsonlRecorder(path, TraceHeader(role="server", transport="x",
                                              protocol_version="v"), apply_header_seeds=False)
        for i in range(300):
            rec.emit("s", "reader", "tick", {"i": i})
            if i % 50 == 0:
                await trio.sleep(0.001)
        rec.close()

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
        "from mcpactor.tracing import JsonlRecorder, TraceHeader\n"
        "async def main():\n"
        f"    r = JsonlRecorder({str(tmp_path / 'x.jsonl')!r}, TraceHeader(role='server',"
        " transport='x', protocol_version='v'))\n"
        "    r.emit('s', 'reader', 'tick', {})\n"
        "    r.close()\n"
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
    rec = MemoryRecorder()
    rec.emit("s", "reader", "message_in", {"msg": EncodedMessage(b'{"token":"abc"}')})
    rec.emit("s", "reader", "custom", {"obj": object(), "password": "pw"})
    events = rec.events()
    assert events[0]["msg"] == {"token": REDACTED}
    assert events[1]["password"] == REDACTED and events[1]["obj"].startswith("<object")


def test_jsonl_recorder_writes_through_its_thread_and_closes_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    rec = JsonlRecorder(path, TraceHeader(role="server", transport="x", protocol_version="v"),
                        apply_header_seeds=False)
    for i in range(2000):
        rec.emit("s", "writer", "message_out", {"msg": EncodedMessage(b'{"i":%d}' % i),
                                                "related": None})
    rec.close()
    rec.emit("s", "writer", "late", {})  # ignored after close
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2001
    assert orjson.loads(lines[-1])["msg"] == {"i": 1999}


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


class _EmitOnly:
    """A tracer without the recorders' fast path: every event through ``emit``."""

    def __init__(self, recorder: MemoryRecorder) -> None:
        self.recorder = recorder

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        self.recorder.emit(session, actor, kind, data)

    def close(self) -> None:
        self.recorder.close()


def test_the_sessions_fast_path_records_what_emit_records() -> None:
    """Messages and handler events go straight into a recorder's buffer (fast_log); the
    trace is the one the same session makes through emit, event for event, in order and
    at the same virtual instants."""
    from mcpactor import connect_transport
    from mcpactor.transports.memory import memory_pair

    def run(tracer: Any) -> None:
        apply_seeds({"scheduler": 1, "random": 2})  # the same rolls and schedule

        async def main() -> None:
            server = load_entry_point(RACE_SERVER)
            a, b = memory_pair()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: server.serve(a, tracer=tracer, session_id="s"))
                async with connect_transport(b) as client:
                    async with trio.open_nursery() as calls:
                        for i in range(40):  # more than a staging step of 32 events
                            calls.start_soon(client.call_tool, "roll", {"sides": 6 + i})
                    await client.call_tool("slow", {"steps": 2, "every": 0.1})

        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))

    class Counting(MemoryRecorder):
        emits = 0

        def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
            self.emits += 1
            super().emit(session, actor, kind, data)

    fast, plain = Counting(), Counting()
    run(fast)
    run(_EmitOnly(plain))
    fast_events, plain_events = fast.events(), plain.events()
    assert len(fast_events) > 4 * 40
    # Only the rarer events went through emit on the fast path.
    assert plain.emits == len(plain_events) and fast.emits < len(fast_events) / 4
    assert fast_events == plain_events
    assert [e["seq"] for e in fast_events] == list(range(1, len(fast_events) + 1))
    kinds = {e["kind"] for e in fast_events}
    assert {"message_in", "handler_started", "handler_finished", "message_out"} <= kinds
    # A closed recorder's fast path records nothing more.
    assert fast.fast_log() is None and fast.events() == fast_events
