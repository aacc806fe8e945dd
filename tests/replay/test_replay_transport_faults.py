"""Replaying what a transport did wrong: oversize input, unparsable input, a broken
write, all recorded on a real stream transport."""

from __future__ import annotations

from pathlib import Path

import orjson
import trio
import trio.testing
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace
from replay_support import RACE_SERVER, kinds

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import Recorder, TraceHeader
from mcpactor.transports.stream import StreamTransport

HANDSHAKE = (
    orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + b"\n"
    + orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n"
)


def _call(rid: int, name: str, args: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": name, "arguments": args,
                                    "_meta": {"progressToken": rid}}}) + b"\n"


def _record(path: Path, client: object) -> None:
    async def main() -> None:
        server = load_entry_point(RACE_SERVER)
        s2c_send, s2c_recv = trio.testing.memory_stream_one_way_pair()
        c2s_send, c2s_recv = trio.testing.memory_stream_one_way_pair()
        transport = StreamTransport(s2c_send, c2s_recv, max_message_size=2000)
        transport.name = "stdio"
        recorder = Recorder(TraceHeader(role="server", transport="stdio",
                                        entry_point=RACE_SERVER), path)
        async with recorder.recording(), trio.open_nursery() as nursery:
            nursery.start_soon(lambda: transport_serve(server, transport, recorder))
            await client(c2s_send, s2c_recv)  # type: ignore[operator]

    async def transport_serve(server: object, transport: StreamTransport, rec: Recorder) -> None:
        await server.serve(transport, tracer=rec)  # type: ignore[attr-defined]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_oversize_and_unparsable_input_replay(tmp_path: Path) -> None:
    path = tmp_path / "bad-input.jsonl"

    async def client(out: trio.abc.SendStream, inp: trio.abc.ReceiveStream) -> None:
        await out.send_all(HANDSHAKE)
        await trio.sleep(0.1)
        await out.send_all(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
                           + b"x" * 5000 + b'"}}\n')
        await trio.sleep(0.1)
        await out.send_all(b"{not json\n" + _call(2, "quick", {}))
        await trio.sleep(0.5)
        await out.aclose()
        while await inp.receive_some():
            pass

    _record(path, client)
    events = [e.data for e in load_trace(path).events]
    assert kinds(events, "message_oversize")[0]["size"] > 2000
    assert any("raw" in e for e in kinds(events, "message_in"))
    result = replay(load_trace(path))
    assert result.faithful and result.mode == "exact", result.divergence


def test_a_write_that_broke_breaks_again_at_the_same_point(tmp_path: Path) -> None:
    path = tmp_path / "broken-write.jsonl"

    async def client(out: trio.abc.SendStream, inp: trio.abc.ReceiveStream) -> None:
        await out.send_all(HANDSHAKE + _call(1, "slow", {"steps": 5, "every": 1.0}))
        await inp.receive_some()
        await trio.sleep(2.5)
        await inp.aclose()  # the server's next write fails
        await trio.sleep(5)
        await out.aclose()

    _record(path, client)
    trace = load_trace(path)
    broken = [e.data for e in trace.events if e.kind == "transport_broken"]
    assert broken and broken[0]["actor"] == "writer"
    result = replay(trace)
    assert result.faithful, result.divergence
    assert result.reproduced == len(trace.events)
