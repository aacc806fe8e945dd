"""A trace cut short (a recording killed mid-run, a partly copied file): the one-line
"truncated" message names an ``--until N``, and following it replays what is there
faithfully — the replay needs nothing past the cut (a task blocked in its transport on
an input or a write the file no longer has still takes its recorded steps)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from replay_support import run_cli

RACY = Path(__file__).resolve().parent / "racy"
BANK_TRACE = RACY / "bank.jsonl"


def _cuts(lines: list[bytes], how_many: int) -> list[int]:
    """Line counts that end a prefix just before the reader takes its next input (its
    waiting steps are in the file, the input is not): the cuts that need the fix."""
    found = []
    for n, line in enumerate(lines):
        record = orjson.loads(line)
        if n > 20 and record.get("kind") == "message_in":
            found.append(n - 1)  # the prefix ends with the pass the reader woke in
    step = max(1, len(found) // how_many)
    return found[::step][:how_many]


def _hint(err: str) -> int:
    match = re.search(r"--until (\d+)", err)
    assert match is not None, err
    return int(match.group(1))


def test_following_the_truncated_hint_replays_a_cut_trace_faithfully(tmp_path: Path) -> None:
    lines = BANK_TRACE.read_bytes().splitlines(keepends=True)
    cuts = _cuts(lines, 4)
    assert cuts
    for n in cuts:
        cut = tmp_path / f"cut-{n}.jsonl"
        cut.write_bytes(b"".join(lines[:n]))
        code, out, err = run_cli("replay", str(cut))
        assert code == 2 and "truncated" in err and len(err.strip().splitlines()) == 1, err
        until = _hint(err)
        code, out, err = run_cli("replay", str(cut), "--until", str(until),
                                 "--server", f"{RACY / 'bank.py'}:server")
        assert code == 0, (n, out, err)
        assert "faithful" in out and "Traceback" not in err


def test_a_lost_stretch_hint_replays_what_comes_before(tmp_path: Path) -> None:
    """A recording that declares lost records (trace_truncated) suggests the record
    before the gap; that prefix replays faithfully without the records after it."""
    lines = BANK_TRACE.read_bytes().splitlines(keepends=True)
    n = _cuts(lines, 2)[-1]
    first = orjson.loads(lines[n - 1])["seq"] + 1
    gap = orjson.dumps({"kind": "trace_truncated", "first": first, "lost": None,
                        "reason": "the trace writer fell behind"}) + b"\n"
    path = tmp_path / "lost.jsonl"
    path.write_bytes(b"".join(lines[:n]) + gap)
    code, _, err = run_cli("replay", str(path))
    assert code == 2 and "lost" in err, err
    code, out, err = run_cli("replay", str(path), "--until", str(_hint(err)),
                             "--server", f"{RACY / 'bank.py'}:server")
    assert code == 0 and "faithful" in out, (out, err)
