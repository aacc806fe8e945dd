"""A file of one session (``--trace`` to a folder) of a server whose sessions share state
diverges alone, and the verdict says why and what to record instead; the whole-process
file of the same run replays."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
import trio.testing
from replay_support import TRACES, run_cli

from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import Recorder, TraceHeader

sys.path.insert(0, str(TRACES))
from peer import drain, peer_pair

ENTRY = f"{TRACES / 'servers' / 'bank_server.py'}:server"


async def _two_sessions(recorder: Recorder) -> None:
    server = load_entry_point(ENTRY)  # a fresh module: the balance starts over
    async with recorder.recording(), trio.open_nursery() as nursery:
        for sid, amount in (("first", 30), ("second", 50)):
            transport, peer = peer_pair()
            session = server.new_session(transport, tracer=recorder, session_id=sid)
            nursery.start_soon(session.run)
            await peer.initialize()
            # The second session's answer holds the balance the first one left.
            await peer.call(1, "withdraw", {"amount": amount})
            await peer.until(rid=1)
            peer.close()
            await drain(peer)
            await session.closed.wait()


def _record(path: Path, split: bool) -> None:
    header = TraceHeader(role="server", transport="memory", entry_point=ENTRY)
    trio.run(_two_sessions, Recorder(header, path, split=split),
             clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_session_file_that_diverges_names_the_shared_state(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    _record(folder, split=True)
    code, out, _ = run_cli("replay", str(folder / "second.jsonl"))
    assert code == 1 and "DIVERGED" in out
    assert "one session of its process" in out and "--trace FILE.jsonl" in out
    whole = tmp_path / "whole.jsonl"
    _record(whole, split=False)
    code, out, _ = run_cli("replay", str(whole))
    assert code == 0 and "faithful" in out and "one session of its process" not in out
