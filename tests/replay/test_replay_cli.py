"""`mcpactor replay` and `mcpactor trace` from the command line: verdicts and exit codes."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest
from mcpactor.replay.trace import TraceError, load_trace
from replay_support import RACE_SERVER, TRACES, run_cli

GOOD = TRACES / "late_cancel.jsonl"


def _variant(tmp_path: Path, old: str, new: str) -> str:
    src = (TRACES / "servers" / "race_server.py").read_text()
    assert old in src
    path = tmp_path / "variant_server.py"
    path.write_text(src.replace(old, new))
    return f"{path}:server"


def test_faithful_replay_exits_0_with_a_verdict() -> None:
    code, out, err = run_cli("replay", str(GOOD))
    assert code == 0, err
    events = len(load_trace(GOOD).events)
    assert f"faithful (exact): {events}/{events} events" in out


def test_changed_handler_code_diverges_with_exit_1_and_a_json_diff(tmp_path: Path) -> None:
    server = _variant(tmp_path, 'return "quick"', 'return "quick!"')
    code, out, _ = run_cli("replay", str(GOOD), "--server", server)
    assert code == 1
    assert "DIVERGED at event #" in out
    assert "expected: " in out and "actual:   " in out
    assert '$.msg.result.content[0].text: expected "quick", got "quick!"' in out
    assert "recorded context (reproduced):" in out and "tools/call quick #1" in out


def test_a_handler_that_never_answers_is_reported_not_hung(tmp_path: Path) -> None:
    server = _variant(tmp_path, 'return "quick"', 'await trio.sleep_forever()')
    code, out, _ = run_cli("replay", str(GOOD), "--server", server)
    assert code == 1
    assert "DIVERGED" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"not json\n", "not a JSON header"),
        (b'{"type":"header","format":"other"}\n', "is not 'mcpactor-trace'"),
        (b'{"type":"header","format":"mcpactor-trace","format_version":7}\n',
         "unknown trace format version 7"),
    ],
)
def test_unusable_traces_exit_2_with_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code, out, err = run_cli("replay", str(path))
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_truncated_traces_exit_2(tmp_path: Path) -> None:
    data = GOOD.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) // 2])
    code, _, err = run_cli("replay", str(cut))
    assert code == 2 and "truncated" in err
    lines = data.splitlines(keepends=True)
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(lines[:-3]))  # whole lines, but no session_closed
    code, _, err = run_cli("replay", str(short))
    assert code == 2 and "session_closed" in err and "--until" in err
    # What was recorded can still be replayed up to where it stops, and shown.
    events = load_trace(short, require_end=False).events
    last = events[-1].seq
    code, out, _ = run_cli("replay", str(short), "--until", str(last), "--server", RACE_SERVER)
    assert code == 0 and f"{len(events)}/{len(events)} events" in out
    assert run_cli("trace", "show", str(short))[0] == 0
    with pytest.raises(TraceError):
        load_trace(tmp_path / "missing.jsonl")


def test_an_entry_point_that_cannot_be_imported_exits_2(tmp_path: Path) -> None:
    code, _, err = run_cli("replay", str(GOOD), "--server", "no_such_module_xyz:server")
    assert code == 2 and "cannot import module 'no_such_module_xyz'" in err
    moved = tmp_path / "elsewhere.jsonl"
    shutil.copy(GOOD, moved)  # its relative entry point no longer resolves
    code, _, err = run_cli("replay", str(moved))
    assert code == 2 and "no such file: servers/race_server.py" in err
    assert "Traceback" not in err


def test_step_until_and_output(tmp_path: Path) -> None:
    out_path = tmp_path / "replayed.jsonl"
    seqs = [ev.seq for ev in load_trace(GOOD).events][:8]
    code, out, _ = run_cli("replay", str(GOOD), "--step", "--until", str(seqs[-1]),
                           "-o", str(out_path))
    assert code == 0
    steps = [line for line in out.splitlines() if line.startswith("  ok #")]
    assert [s.split()[1] for s in steps] == [f"#{i}" for i in seqs]
    assert "faithful (exact): 8/8 events" in out
    replayed = [orjson.loads(x) for x in out_path.read_bytes().splitlines()[1:]]
    assert [e["seq"] for e in replayed if e["kind"] not in ("sched", "read")] == seqs


def test_break_at_stops_just_before_the_event(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def hook(*args: object, **kwargs: object) -> None:
        seen.append("break")

    monkeypatch.setattr(sys, "breakpointhook", hook)
    seqs = [ev.seq for ev in load_trace(GOOD).events]
    at = seqs[9]
    code, out, err = run_cli("replay", str(GOOD), "--break-at", str(at), "--step")
    assert code == 0 and seen == ["break"]
    assert f"stopped before #{at}" in err
    steps = [line.split()[1] for line in out.splitlines() if line.startswith("  ok #")]
    assert f"#{at}" in steps and f"#{seqs[8]}" in steps


def test_a_trace_whose_side_does_not_match_its_code_is_refused_clearly(tmp_path: Path) -> None:
    # A server trace relabelled as a client's: its entry point is a server, not client
    # code (client traces themselves replay: test_replay_client.py).
    path = tmp_path / "client.jsonl"
    path.write_bytes(GOOD.read_bytes().replace(b'"role":"server"', b'"role":"client"', 1))
    code, _, err = run_cli("replay", str(path), "--client", RACE_SERVER)
    assert code == 2 and "is a Server: a client trace replays client code" in err
    code, _, err = run_cli("replay", str(path), "--server", RACE_SERVER)
    assert code == 2 and "this is a client-side trace" in err
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(GOOD.read_bytes().replace(b'"role":"server"', b'"role":"proxy"', 1))
    code, _, err = run_cli("replay", str(odd))
    assert code == 2 and "only server and client traces replay" in err


def test_the_server_option_overrides_the_header(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere.jsonl"
    shutil.copy(GOOD, moved)
    code, out, _ = run_cli("replay", str(moved), "--server", RACE_SERVER)
    assert code == 0 and "faithful" in out


@pytest.mark.parametrize("command", [["replay", str(GOOD), "-o"], ["trace", "html", str(GOOD), "-o"]],
                         ids=["replay-output", "html"])
def test_an_output_path_that_cannot_be_written_is_one_line(tmp_path: Path, command: list[str]) -> None:
    target = tmp_path / "no" / "such" / "folder" / "out"
    code, _, err = run_cli(*command, str(target))
    assert code == 2 and "Traceback" not in err
    assert f"cannot write {target}" in err and len(err.strip().splitlines()) == 1
    assert not target.exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--until", "-3"], "argument --until: -3 is too small"),
     (["--break-at", "0"], "argument --break-at: 0 is too small"),
     (["--schedules", "0"], "argument --schedules: 0 is too small"),
     (["--timeout", "0"], "argument --timeout: 0 must be more than 0"),
     (["--serve", "--against", "x"], "--serve (play the recorded server to a client) and "
                                     "--against (play the recorded client to a server) exclude")],
)
def test_options_that_cannot_mean_anything_are_refused(option: list[str], message: str) -> None:
    code, out, err = run_cli("replay", str(GOOD), *option)
    assert code == 2 and out == "" and "Traceback" not in err
    assert message in err


def test_against_a_command_that_does_not_exist_is_one_line() -> None:
    code, _, err = run_cli("replay", str(GOOD), "--against", "no-such-mcp-server-xyz --stdio")
    assert code == 2 and "Traceback" not in err
    assert "cannot start no-such-mcp-server-xyz --stdio" in err
    assert "--against takes a command line" in err and len(err.strip().splitlines()) == 1
