"""`mcpactor demo`: a live stdio session, recorded on both sides and replayed, ends with
two verdicts."""

from __future__ import annotations

from pathlib import Path

import orjson
from replay_support import run_cli


def test_demo_records_a_real_session_and_replays_it_faithfully(tmp_path: Path) -> None:
    trace = tmp_path / "demo.jsonl"
    client_trace = tmp_path / "demo-client.jsonl"
    code, out, err = run_cli("demo", "--trace", str(trace), "--client-trace", str(client_trace))
    assert code == 0, out + err
    assert "add(2, 3) -> {'result': 5}" in out
    assert "progress 5/5: step 5 of 5" in out
    # Both sides replay: the server's handlers, then the client code (which stays quiet).
    assert out.count("replay: faithful") == 2
    assert out.count("progress 5/5") == 1
    client_header = orjson.loads(client_trace.read_bytes().splitlines()[0])
    assert client_header["role"] == "client"
    # The demo's code ships in the package: traces name modules, not checkout paths.
    assert client_header["entry_point"] == "mcpactor.demo.client:main"
    assert client_header["client_options"] == {"timeout": 30, "init_timeout": 30.0, "mode": "auto"}
    header = orjson.loads(trace.read_bytes().splitlines()[0])
    assert header["transport"] == "stdio" and header["clock"]["kind"] == "monotonic"
    assert header["entry_point"] == "mcpactor.demo.server:server"


def test_demo_fails_loudly_without_its_server(tmp_path: Path) -> None:
    code, _, err = run_cli("demo", "--trace", str(tmp_path / "t.jsonl"),
                           "--server", str(tmp_path / "missing.py"))
    assert code == 2 and "no demo server" in err
