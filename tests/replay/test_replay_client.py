"""Client-side traces: recorded by ``connect_*(trace=..., entry_point=...)`` against a
real server process, replayed by running the client code again against the recording
(and played to real peers with ``--serve`` and ``--against``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
from mcpactor.replay.engine import ReplayOptions, replay
from mcpactor.replay.trace import load_trace
from replay_support import RACE_SERVER, ROOT, events_of, run_cli

from mcpactor import Timeout, connect_stdio
from mcpactor.client.script import as_client_script
from mcpactor.entrypoint import load_entry_point
from mcpactor.tracing import MemoryRecorder, TraceHeader

SCRIPTS = ROOT / "tests" / "replay" / "client_scripts.py"
#: The corpus's client code (traces/clients/): its client race, recorded afresh here.
RACE_CLIENTS = ROOT / "traces" / "clients" / "race_clients.py"
MCPACTOR = [sys.executable, "-m", "mcpactor"]
SERVER = [*MCPACTOR, "run", RACE_SERVER]


def record(trace: Path, name: str, server: list[str] = SERVER,
           code: Path = SCRIPTS, mode: str = "legacy") -> tuple[Any, str | None]:
    """Run the client code ``code:NAME`` against a real stdio server, recording
    ``trace``: (what main returned, the repr of what it raised)."""
    script = as_client_script(load_entry_point(f"{code}:{name}"))
    assert script is not None

    async def run() -> tuple[Any, str | None]:
        try:
            async with connect_stdio(server, trace=trace, entry_point=f"{code}:{name}",
                                     mode=mode, **script.connect_options()) as client:
                return await script.main(client), None
        except Exception as exc:
            return None, repr(exc)

    return trio.run(run)


def _events(trace: Path) -> list[dict[str, Any]]:
    return [e for e in map(orjson.loads, trace.read_bytes().splitlines())
            if e.get("type") != "header"]


def test_a_recorded_client_replays_faithfully_running_its_own_code(tmp_path: Path) -> None:
    trace = tmp_path / "client.jsonl"
    assert record(trace, "main", mode="auto") == (None, None)
    header = orjson.loads(trace.read_bytes().splitlines()[0])
    assert (header["role"], header["transport"]) == ("client", "stdio")
    assert header["entry_point"] == f"{SCRIPTS}:main"
    sent = [e["msg"].get("method") for e in _events(trace) if e["kind"] == "message_out"]
    # The client probes server/discover first; the server speaks 2026-07-28 (stateless).
    assert sent == ["server/discover", "tools/call", "tools/call", "tools/call"]
    code, out, err = run_cli("replay", str(trace))
    assert code == 0, out + err
    assert "replay: faithful" in out


def test_the_recorded_timeouts_come_back_in_the_replay(tmp_path: Path) -> None:
    """Timeouts shape a client session (every request sets a timer); the header keeps
    the connect options, so a bare ``main`` replays with the same ones."""
    trace = tmp_path / "client.jsonl"
    script = as_client_script(load_entry_point(f"{SCRIPTS}:main"))
    assert script is not None

    async def run() -> None:
        async with connect_stdio(SERVER, trace=trace, entry_point=f"{SCRIPTS}:main",
                                 timeout=Timeout(5, maximum=9), init_timeout=20) as client:
            await script.main(client)

    trio.run(run)
    header = orjson.loads(trace.read_bytes().splitlines()[0])
    assert header["client_options"] == {
        "timeout": {"seconds": 5, "reset_on_progress": True, "maximum": 9},
        "init_timeout": 20, "mode": "auto"}
    timers = [e for e in _events(trace) if e["kind"] == "timer_set"]
    assert len(timers) == 3
    code, out, _ = run_cli("replay", str(trace))
    assert code == 0, out


def test_changed_client_code_diverges_where_it_changed(tmp_path: Path) -> None:
    trace = tmp_path / "client.jsonl"
    record(trace, "main")
    code, out, _ = run_cli("replay", str(trace), "--client", f"{SCRIPTS}:changed",
                           "--schedules", "4")
    assert code == 1
    assert "DIVERGED" in out
    assert '$.msg.params.name: expected "quick", got "sleepy"' in out


def test_a_client_race_that_failed_live_fails_the_same_way_in_every_replay(
    tmp_path: Path,
) -> None:
    """The client assumes the call it started first is answered first; the server
    answers the shorter one first, so the client's check fails. The recording holds the
    failure (``client_failed``) and every replay reproduces it, byte for byte."""
    trace = tmp_path / "race.jsonl"
    _, raised = record(trace, "first_done_first", code=RACE_CLIENTS)
    assert raised == "AssertionError(\"answers came back as ['short', 'long']\")"
    failed = [e for e in _events(trace) if e["kind"] == "client_failed"]
    assert [e["error"] for e in failed] == [raised]
    loaded = load_trace(trace)
    outputs = set()
    for _ in range(20):
        result = replay(loaded, ReplayOptions())
        assert result.faithful, result.divergence
        outputs.add(result.output_bytes())
        replayed = [e for e in events_of(result.output) if e["kind"] == "client_failed"]
        assert [e["error"] for e in replayed] == [raised]
    assert len(outputs) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_client_handlers_run_again_in_the_replay(tmp_path: Path, mode: str) -> None:
    """The server asks the client's model mid-call; the replay runs the client's
    sampling handler again, so a handler that answers differently diverges. In a
    handshake session the answer is a response to the server's request; in 2026-07-28
    (``auto`` against our server) it is an input round: the tools/call sent again with
    ``inputResponses``, both rounds recorded and replayed."""
    trace = tmp_path / "sampling.jsonl"
    assert record(trace, "sampling", mode=mode) == (None, None)
    out_msgs = [e["msg"] for e in _events(trace) if e["kind"] == "message_out"]
    if mode == "legacy":
        answers = [m for m in out_msgs if "result" in m]
        assert answers[0]["result"]["content"]["text"] == "42"
    else:
        assert out_msgs[0]["method"] == "server/discover"
        retried = [m for m in out_msgs if "inputResponses" in (m.get("params") or {})]
        (answer,) = retried[0]["params"]["inputResponses"].values()
        assert answer["content"]["text"] == "42"
        assert retried[0]["params"]["requestState"]
    code, out, _ = run_cli("replay", str(trace))
    assert code == 0, out
    edited = tmp_path / "edited_scripts.py"
    edited.write_text(SCRIPTS.read_text().replace('TextContent(text="42")',
                                                  'TextContent(text="41")'))
    code, out, _ = run_cli("replay", str(trace), "--client", f"{edited}:sampling",
                           "--schedules", "4")
    assert code == 1
    assert '"42"' in out and '"41"' in out, out


def test_serve_plays_the_recorded_server_of_a_client_trace(tmp_path: Path) -> None:
    trace = tmp_path / "client.jsonl"
    recorded, raised = record(trace, "one_at_a_time")
    assert raised is None and recorded[0] == "quick" and recorded[1] == "slept 0.1"
    served = [*MCPACTOR, "replay", "--serve", str(trace), "--timeout", "10"]
    replayed, raised = record(tmp_path / "again.jsonl", "one_at_a_time", server=served)
    assert raised is None
    assert replayed == recorded  # the die roll too: the recording's, not a new one


def test_against_sends_a_client_trace_to_a_live_server(tmp_path: Path) -> None:
    """The recorded client's messages go to a live server, whose answers (here the
    initialize result and three calls, two of them answered in the reverse order) are
    compared with the ones the client received."""
    trace = tmp_path / "client.jsonl"
    record(trace, "main")
    code, out, _ = run_cli("replay", str(trace), "--against", " ".join(SERVER))
    assert code == 0, out
    assert "same: 4 response(s), each as recorded" in out
    src = (ROOT / "traces" / "servers" / "race_server.py").read_text()
    changed = tmp_path / "changed.py"
    changed.write_text(src.replace('return "quick"', 'return "slow"'))
    code, out, _ = run_cli("replay", str(trace), "--against",
                           " ".join([*MCPACTOR, "run", f"{changed}:server"]))
    assert code == 1
    assert "1 of 4 response(s) changed" in out
    [row] = [line for line in out.splitlines() if line.strip().startswith("2 ")]
    assert row.split() == ["2", "tools/call", "quick", "slow"]


def test_wrong_entry_points_for_a_client_trace_are_one_line_errors(tmp_path: Path) -> None:
    trace = tmp_path / "client.jsonl"
    record(trace, "main")
    code, _, err = run_cli("replay", str(trace), "--server", RACE_SERVER)
    assert code == 2
    assert "client-side trace" in err and "--client" in err
    code, _, err = run_cli("replay", str(trace), "--client", RACE_SERVER)
    assert code == 2
    assert "is a Server" in err and "async def main(client)" in err
    code, _, err = run_cli("replay", str(trace), "--client", f"{SCRIPTS}:not_async")
    assert code == 2
    assert "not_async is not an async function" in err
    lines = trace.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["entry_point"] = None
    nameless = tmp_path / "nameless.jsonl"
    nameless.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    code, _, err = run_cli("replay", str(nameless))
    assert code == 2
    assert "pass --client module:attr" in err
    assert "Traceback" not in err


async def test_trace_and_tracer_together_are_refused() -> None:
    with pytest.raises(ValueError, match=r"trace= .* or tracer=, not both"):
        async with connect_stdio(SERVER, trace="x.jsonl",
                                 tracer=MemoryRecorder(TraceHeader(role="client",
                                                                   transport="stdio"))):
            pass
