"""``python -m benchmarks.instructions``: mistakes are one line and exit status 2; the sink
workload counts the work the sink really does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks import instructions
from benchmarks.drivers.pipe_client import PipeSession
from mcpactor.tracing.tracer import WIDTH


@pytest.mark.parametrize("argv", [["--workloads", "pipelined,bogus"], ["--calls", "0"],
                                  ["--workloads", ","]])
def test_a_bad_option_names_the_fix(argv: list[str], capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/" + name)
    assert instructions.main(argv) == 2
    err = capsys.readouterr().err
    assert "use --workloads pipelined,sequential,sink,otel and --calls N >= 1" in err
    assert err.count("\n") == 1


def test_without_valgrind_it_says_how_to_get_it(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main([]) == 2
    assert "valgrind is not installed (Debian: apt-get install valgrind)" in capsys.readouterr().err


def test_the_sink_workload_rebuilds_what_the_recorder_handed_on(tmp_path: Path) -> None:
    """The sink workload's chunks, written by the sink's core, are the recorded trace
    byte for byte: the count is of the very work the sink does for such a run."""
    from mcpactor.tracing.sink import MemoryFiles, SinkCore

    trace = tmp_path / "t.jsonl"
    argv = [sys.executable, "-m", "mcpactor", "run", instructions.ECHO, "--trace", str(trace)]
    session = PipeSession(argv, cwd=str(instructions.ROOT),
                          stderr_path=str(tmp_path / "err"))
    try:
        session.initialize(timeout=60)
        session.pipelined(inflight=10, duration=1e9, max_calls=200, warmup=0)
    finally:
        session.close(grace=30)
    parts, calls = instructions.staged_parts(trace)
    assert calls >= 200 and len(parts) > 1
    # Most events travel flat, as the session logs them (no dict among their values);
    # the schedule's records too.
    items = [item for part in parts for item in instructions.unframe(part)[1]]
    records = [tuple(items[i : i + WIDTH]) for i in range(0, len(items), WIDTH)]
    assert sum(type(r[4]) is not dict for r in records) >= 4 * calls
    assert any(r[3] == "sched" for r in records)
    files = MemoryFiles()
    core = SinkCore(instructions.sink_spec(trace), files=files.open)
    for part in parts:
        core.chunk(*instructions.unframe(part))
    assert files.files["t.jsonl"] == trace.read_bytes().splitlines()


def test_the_whole_cost_adds_the_sinks_work_to_the_servers_share() -> None:
    server = {"untraced_server": 200_000, "traced_server": 216_000, "server_cost": 0.08}
    whole = instructions.whole_cost(server, {"sink_per_call": 50_000, "calls": 6000})
    assert whole == {"instructions_per_call": 66_000, "cost": 0.33}
