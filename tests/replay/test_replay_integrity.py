"""What a replay says of a trace that was edited, cut, or is impossible; that a replay's
own trace is the same bytes whatever the verdict; the interleaving view; a rotated
whole-process trace replayed from its segments."""

from __future__ import annotations

from pathlib import Path

import orjson
import trio
from mcpactor.replay.trace import load_trace
from replay_support import RACE_SERVER, TRACES, run_cli

LIVE = TRACES / "live"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _write(path: Path, lines: list[bytes]) -> Path:
    """An edited copy of a corpus trace, beside a copy of the servers its header names."""
    import shutil

    if not (path.parent / "servers").exists():
        shutil.copytree(TRACES / "servers", path.parent / "servers")
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _first(lines: list[bytes], pred: object) -> int:
    for i, line in enumerate(lines[1:], start=1):
        obj = orjson.loads(line)
        if pred(obj):  # type: ignore[operator]
            return i
    raise AssertionError("no such line")


def test_a_line_taken_out_is_named_exit_2(tmp_path: Path) -> None:
    lines = _lines(TRACES / "late_cancel.jsonl")
    cancel = _first(lines, lambda e: e.get("kind") == "message_in"
                    and e["msg"].get("method") == "notifications/cancelled")
    cut = _write(tmp_path / "cut.jsonl", lines[:cancel] + lines[cancel + 1:])
    code, out, err = run_cli("replay", str(cut))
    assert code == 2 and out == ""
    assert f"line {cancel + 1}: seq jumps" in err and "1 line(s) are missing" in err


def test_an_edited_input_is_a_divergence_and_nothing_after_it_counts_as_reproduced(
        tmp_path: Path) -> None:
    lines = _lines(TRACES / "racy_withdraw.jsonl")
    i = _first(lines, lambda e: e.get("kind") == "message_in"
               and e["msg"].get("params", {}).get("arguments", {}).get("amount") == 80)
    lines[i] = lines[i].replace(b"\"amount\":80", b"\"amount\":8")
    edited = _write(tmp_path / "edited.jsonl", lines)
    code, out, _ = run_cli("replay", str(edited))
    assert code == 1 and "DIVERGED" in out
    # The report's context holds only events the replay did reproduce, all before the
    # divergence.
    seq = int(out.split("DIVERGED at event #", 1)[1].split(":", 1)[0])
    context = [line for line in out.splitlines() if line.startswith("    #")]
    assert context and all(int(c.split()[0][1:]) < seq for c in context)


def test_a_task_that_runs_before_it_is_named_is_refused(tmp_path: Path) -> None:
    lines = _lines(TRACES / "late_cancel.jsonl")
    i = _first(lines, lambda e: e.get("kind") == "sched" and "new" not in e)
    obj = orjson.loads(lines[i])
    obj["run"] = [99]
    lines[i] = orjson.dumps(obj)
    bad = _write(tmp_path / "bad.jsonl", lines)
    code, _, err = run_cli("replay", str(bad))
    assert code == 2 and f"line {i + 1}: task #99 runs before it was named" in err


def test_the_replays_own_trace_is_the_same_bytes_whatever_the_verdict(tmp_path: Path) -> None:
    lines = _lines(TRACES / "racy_withdraw.jsonl")
    i = _first(lines, lambda e: e.get("kind") == "message_in"
               and e["msg"].get("params", {}).get("arguments", {}).get("amount") == 80)
    lines[i] = lines[i].replace(b"\"amount\":80", b"\"amount\":8")
    edited = _write(tmp_path / "edited.jsonl", lines)
    outputs = set()
    for n in range(3):
        out = tmp_path / f"out{n}.jsonl"
        code, _, _ = run_cli("replay", str(edited), "-o", str(out))
        assert code == 1
        outputs.add(out.read_bytes())
    assert len(outputs) == 1


def test_the_interleaving_shows_the_other_handler_inside_the_check_then_act_window() -> None:
    trace = TRACES / "racy_withdraw.jsonl"
    events = [e.data for e in load_trace(trace).events]
    # The request whose withdrawal overdrew: its handler checked before another's act.
    overdrawn = next(e["msg"]["id"] for e in events if e["kind"] == "message_out"
                     and "result" in e["msg"]
                     and "-" in str(e["msg"]["result"].get("content", [{}])[0].get("text", "")))
    code, out, _ = run_cli("replay", str(trace), "--interleaving", str(overdrawn))
    assert code == 0, out
    view = out.split("interleaving of request", 1)[1].splitlines()
    mine = [i for i, line in enumerate(view) if line.strip().startswith(">")]
    others = [i for i, line in enumerate(view) if line.strip().startswith("!")]
    assert len(mine) >= 2 and any(mine[0] < i < mine[-1] for i in others)
    # Lines of the application's code, not the runtime's.
    assert "race_server.py" in out and "await" in out
    code, out, err = run_cli("replay", str(trace), "--interleaving", "12345")
    assert code == 2 and "no handler ran for request 12345" in err


def test_the_interleaving_in_trace_show_and_html(tmp_path: Path) -> None:
    trace = next(LIVE.glob("bank-stdio-raw-*.jsonl"))
    rid = next(e.data["id"] for e in load_trace(trace).events if e.kind == "handler_started")
    code, out, _ = run_cli("trace", "show", str(trace), "--interleaving", orjson.dumps(rid).decode())
    assert code == 0 and "interleaving of request" in out
    page = tmp_path / "t.html"
    code, _, _ = run_cli("trace", "html", str(trace), "-o", str(page), "--interleaving",
                         orjson.dumps(rid).decode())
    assert code == 0
    html = page.read_text()
    assert "Interleaving of request" in html and 'class="mine"' in html


def test_a_rotated_trace_replays_from_its_first_segment(tmp_path: Path) -> None:
    from mcpactor import connect_transport
    from mcpactor.entrypoint import load_entry_point
    from mcpactor.tracing import Recorder, Rotation, TraceHeader
    from mcpactor.transports.memory import memory_pair

    async def main() -> None:
        server = load_entry_point(RACE_SERVER)
        recorder = Recorder(TraceHeader(role="server", transport="memory",
                                        entry_point=RACE_SERVER),
                            tmp_path / "server.jsonl", rotation=Rotation(max_bytes=2048))
        async with recorder.recording():
            a, b = memory_pair()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: server.serve(a, tracer=recorder))
                async with connect_transport(b) as client:
                    for i in range(60):
                        await client.call_tool("roll", {"sides": 6 + i})
                        if i % 15 == 14:
                            # Records reach the sink in timed chunks; rotation is
                            # checked per chunk, so let a few chunks go.
                            await trio.sleep(0.12)

    trio.run(main)
    segments = sorted(tmp_path.glob("server-*.jsonl"))
    assert len(segments) >= 3
    code, out, _ = run_cli("replay", str(segments[-1]))
    assert code == 0 and "faithful" in out
    whole = load_trace(segments[-1])
    assert whole.events[0].kind == "session_started"
    segments[0].unlink()
    code, _, err = run_cli("replay", str(segments[-1]))
    assert code == 2 and "which is needed and missing" in err and "replay the last" in err
