"""Determinism: the same trace replays to the same bytes; a race seen once is seen always."""

from __future__ import annotations

from pathlib import Path

from mcpactor.replay.engine import ReplayOptions, replay
from mcpactor.replay.trace import load_trace, parse_trace
from replay_support import TRACES, answers, events_of, record_module

load_trace_bytes = parse_trace


def test_a_trace_replays_to_byte_identical_output_100_times() -> None:
    trace = load_trace(TRACES / "timeout_same_instant.jsonl")
    outputs = {replay(trace).output_bytes() for _ in range(100)}
    assert len(outputs) == 1
    [out] = outputs
    # The header, every event, and the schedule it ran: itself a trace, equal to the
    # recording but for the header's mark and the events' times.
    assert out.count(b"\n") == len((TRACES / "timeout_same_instant.jsonl").read_bytes().splitlines())
    assert load_trace_bytes(out).events[-1].kind == "session_closed"


def test_ten_seconds_of_sleeps_replay_on_the_virtual_clock() -> None:
    trace = load_trace(TRACES / "slow_progress.jsonl")
    result = replay(trace)
    assert result.faithful
    assert result.virtual_seconds == 10.0
    times = [e["t"] for e in events_of(result.output) if e["kind"] == "message_out"]
    assert times[-1] == 10.0 and times == sorted(times)


def _balance_went_negative(events: list[dict[str, object]]) -> bool:
    balances = [a["result"]["structuredContent"]["balance"]  # type: ignore[index]
                for rid in (1, 2) for a in answers(events, rid)]  # type: ignore[arg-type]
    return min(balances) < 0  # type: ignore[type-var]


def test_a_racy_handler_fails_in_some_live_runs_and_its_trace_fails_in_every_replay(
    tmp_path: Path,
) -> None:
    record = record_module()
    # Live: the same two concurrent withdrawals, under different scheduling seeds.
    outcomes: dict[int, bool] = {}
    for seed in range(1, 17):
        path = tmp_path / f"withdraw-{seed}.jsonl"
        outcomes[seed] = _balance_went_negative(record.run_once("racy_withdraw", seed, path))
    assert any(outcomes.values()) and not all(outcomes.values()), outcomes
    failing = min(seed for seed, bad in outcomes.items() if bad)
    passing = min(seed for seed, bad in outcomes.items() if not bad)

    trace = load_trace(tmp_path / f"withdraw-{failing}.jsonl")
    results = [replay(trace) for _ in range(100)]
    assert all(r.faithful for r in results)
    assert all(_balance_went_negative(events_of(r.output)) for r in results)
    assert len({r.output_bytes() for r in results}) == 1

    # The good run replays as good: the replay follows the trace, not luck.
    good = replay(load_trace(tmp_path / f"withdraw-{passing}.jsonl"))
    assert good.faithful and not _balance_went_negative(events_of(good.output))


def test_every_scenario_recorded_afresh_replays_exactly(tmp_path: Path) -> None:
    """Guards the replayer itself, whatever state the committed corpus is in."""
    import logging

    record = record_module()
    logging.disable(logging.CRITICAL)
    try:
        for name in [*record.SCENARIOS, *record.CLIENT_SCENARIOS]:
            for seed in (3, 4):
                path = tmp_path / f"{name}-{seed}.jsonl"
                record.run_once(name, seed, path)
                result = replay(load_trace(path), ReplayOptions())
                assert result.faithful, (name, seed, result.divergence)
                assert result.mode == "exact", (name, seed)
    finally:
        logging.disable(logging.NOTSET)
