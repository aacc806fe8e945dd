"""The compiled recording hooks (``mcpactor.tracing._hooks``) and the Python ones
(``mcpactor.tracing.hooks``, ``tasks.Naming``) record the same trace, byte for byte."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import random
import sys
from pathlib import Path

import pytest
import trio

from mcpactor.tracing import entropy, hooks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traces"))
record = importlib.import_module("record")

# Races of the corpus: cancellations against answers, sampling, progress, answers out of
# order, random sleeps. Not timers due at the same instant (the task races wake the client
# and the task's work at once; tests/tasks replays those): Trio breaks that tie by the cancel scopes' addresses,
# which differ from one run to the next whatever records them (the trace holds the order
# it took).
SCENARIOS = ["late_cancel", "cancel_during_sampling", "progress_race", "reverse_responses",
             "client_disconnect", "racy_withdraw", "crash_mid_stream", "duplicate_id"]


def test_the_compiled_hooks_are_built_here() -> None:
    # CI builds them (make setup: pip install -e); a machine without a C compiler runs
    # the Python ones, which the tests below check against these.
    assert hooks.native() is not None, "mcpactor.tracing._hooks was not built"


@pytest.mark.parametrize("name", SCENARIOS)
def test_both_hooks_record_the_same_bytes(name: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from trio._core import _run

    traces = {}
    for mode in ("compiled", "python"):
        monkeypatch.setenv("MCPACTOR_PURE_HOOKS", "1" if mode == "python" else "0")
        assert (hooks.native() is None) == (mode == "python")
        _run._r.seed(7)  # the recording's coin is drawn from Trio's
        # The same wall clock and entropy for both (task ids and times are drawn).
        source = random.Random(11)
        ticks = itertools.count(1_800_000_000)
        monkeypatch.setitem(entropy._real, "urandom", source.randbytes)
        monkeypatch.setitem(entropy._real, "time", functools.partial(_tick, ticks))
        path = tmp_path / f"{name}-{mode}.jsonl"
        record.run_once(name, 3, path)
        traces[mode] = path.read_bytes().splitlines()
    compiled, python = traces["compiled"], traces["python"]
    # Each header holds the recording process's pid; everything after it is the run.
    assert compiled[1:] == python[1:]
    assert any(b'"kind":"sched"' in line and b'"new"' in line for line in compiled)



def test_the_python_hooks_follow_a_trio_run_without_the_compiled_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The loader honours MCPACTOR_PURE_HOOKS whatever was built.
    monkeypatch.setenv("MCPACTOR_PURE_HOOKS", "1")
    assert hooks.native() is None
    monkeypatch.setenv("MCPACTOR_PURE_HOOKS", "")
    assert hooks.native() is not None or importlib.util.find_spec(
        "mcpactor.tracing._hooks") is None
    assert trio  # imported for the run's internals the recorder checks


def _tick(ticks: itertools.count[int]) -> float:
    return float(next(ticks))
