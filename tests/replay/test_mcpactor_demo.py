"""`mcpactor demo`: a live stdio session, recorded and replayed, ends with a verdict."""

from __future__ import annotations

from pathlib import Path

import orjson
from replay_support import run_cli


def test_demo_records_a_real_session_and_replays_it_faithfully(tmp_path: Path) -> None:
    trace = tmp_path / "demo.jsonl"
    code, out, err = run_cli("demo", "--trace", str(trace))
    assert code == 0, out + err
    assert "add(2, 3) -> {'result': 5}" in out
    assert "progress 5/5: step 5 of 5" in out
    assert "replay: faithful" in out
    header = orjson.loads(trace.read_bytes().splitlines()[0])
    assert header["transport"] == "stdio" and header["clock"]["kind"] == "monotonic"
    assert header["entry_point"].endswith("examples/demo_server.py:server")


def test_demo_fails_loudly_without_its_server(tmp_path: Path) -> None:
    code, _, err = run_cli("demo", "--trace", str(tmp_path / "t.jsonl"),
                           "--server", str(tmp_path / "missing.py"))
    assert code == 2 and "no demo server" in err
