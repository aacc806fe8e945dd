"""What ``mcpactor replay`` says, in one line, when it cannot do what was asked — and
the changed-responses table of a trace of several sessions: an unreachable URL, a target
that writes lines that are not JSON-RPC, a rotated segment without the ones before it, a
moved trace whose entry point was relative. Real subprocesses, real 127.0.0.1 ports."""

from __future__ import annotations

import shutil
import socket
import sys
import time
from pathlib import Path

from mcpactor.replay.trace import load_trace
from replay_support import TRACES, run_cli
from test_replay_segments_views import _rotate

RACY = Path(__file__).resolve().parent / "racy"
BANK_TRACE = RACY / "bank.jsonl"
TWO_SESSIONS = TRACES / "live" / "bank-http-mcpactor-1.jsonl"


def _one_line(code: int, out: str, err: str) -> str:
    assert code == 2, (out, err)
    assert not out.strip() and "Traceback" not in err, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_url_is_one_line_that_says_so() -> None:
    url = f"http://127.0.0.1:{_dead_port()}/mcp"
    started = time.monotonic()
    line = _one_line(*run_cli("replay", str(BANK_TRACE), "--against", url, "--timeout", "3"))
    assert f"cannot reach {url}" in line and "changed" not in line, line
    assert time.monotonic() - started < 15


def test_lines_that_are_not_json_rpc_are_not_answers() -> None:
    script = "print('hello from a script'); print(123)"
    target = f"{sys.executable} -c \"{script}\""
    line = _one_line(*run_cli("replay", str(BANK_TRACE), "--against", target,
                              "--timeout", "5"))
    assert "after 0 answer(s)" in line, line
    assert "2 line(s) that are not JSON-RPC" in line and "hello from a script" in line, line
    # One that keeps running: it never answered, and what it wrote is said.
    script = "import time; print('hello'); time.sleep(30)"
    target = f"{sys.executable} -c \"{script}\""
    started = time.monotonic()
    line = _one_line(*run_cli("replay", str(BANK_TRACE), "--against", target,
                              "--timeout", "2"))
    assert "never answered" in line and "not JSON-RPC" in line and "'hello'" in line, line
    assert time.monotonic() - started < 20


def test_a_segment_without_the_ones_before_it_says_what_is_needed(tmp_path: Path) -> None:
    first, middle, last = _rotate(BANK_TRACE, tmp_path, 3)
    # The --trace path itself stays empty and points to the segments.
    line = _one_line(*run_cli("replay", str(tmp_path / "rot.jsonl")))
    assert "rotated into 3 segment(s)" in line and str(last) in line
    first.unlink()
    line = _one_line(*run_cli("replay", str(middle)))
    assert line.startswith(f"mcpactor: {middle}: segment 2 of a rotated recording"), line
    assert f"continues {first.name}, which is needed and missing" in line, line
    assert "replay the last one" in line
    line = _one_line(*run_cli("replay", str(last)))
    assert line.startswith(f"mcpactor: {last}: segment 3"), line
    assert f"{middle.name} continues {first.name}" in line, line


def test_a_moved_trace_says_where_it_looked_for_its_entry_point(
        tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    trace = moved / "bank.jsonl"
    shutil.copy(BANK_TRACE, trace)  # its entry point, bank.py, stays behind
    monkeypatch.chdir(tmp_path)
    line = _one_line(*run_cli("replay", str(trace)))
    assert "no such file: bank.py" in line, line
    assert str(tmp_path / "bank.py") in line and str(moved / "bank.py") in line, line
    assert "--server PATH/TO/bank.py:server" in line and "directory" in line, line
    code, out, err = run_cli("replay", str(trace), "--server", f"{RACY / 'bank.py'}:server")
    assert code == 0 and "faithful" in out, (out, err)


def test_server_changes_on_several_sessions_name_the_session(tmp_path: Path) -> None:
    """``--server`` on a whole-process trace whose sessions reuse request ids: the table
    has a session column, so each row says whose answer changed."""
    source = (TRACES / "servers" / "bank_server.py").read_text()
    assert 'return f"deposited {amount}: {_state()}"' in source
    changed = tmp_path / "bank_changed.py"
    changed.write_text(source.replace('return f"deposited {amount}: {_state()}"',
                                      'return f"put in {amount}: {_state()}"'))
    code, out, err = run_cli("replay", str(TWO_SESSIONS), "--server", f"{changed}:server")
    assert code == 1, (out, err)
    table = out[out.index("The new code"):].splitlines()
    assert table[2].split() == ["session", "id", "method", "recorded", "now"], table
    rows = [line.split() for line in table[3:]
            if line.startswith("  ") and not line.strip().startswith("note:")]
    recorded = load_trace(TWO_SESSIONS).sessions
    assert len(recorded) > 1 and rows, table
    assert all(any(sid.startswith(row[0]) for sid in recorded) for row in rows), table
