"""The race corpus in traces/: every trace replays exactly and shows its race's outcome.

If a deliberate change to the runtime alters one of these outcomes, re-record the
corpus with `python traces/record.py` and review the new traces. The same races
recorded by an earlier mcpactor, in trace format version 1 (traces/v1/), still load and
replay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace
from replay_support import TRACES, answers, events_of, kinds

Events = list[dict[str, Any]]


def _late_cancel(ev: Events) -> None:
    out = next(i for i, e in enumerate(ev) if e["kind"] == "message_out"
               and e["msg"].get("id") == 1 and "result" in e["msg"])
    cancel_in = next(i for i, e in enumerate(ev) if e["kind"] == "message_in"
                     and e["msg"].get("method") == "notifications/cancelled")
    assert out < cancel_in
    assert "finished request" in kinds(ev, "message_dropped")[0]["reason"]
    assert not kinds(ev, "cancel_applied")


def _cancel_before_start(ev: Events) -> None:
    [applied] = kinds(ev, "cancel_applied")
    assert applied["stage"] == "before_start" and applied["by"] == "peer"
    assert applied["why"] == "never mind"
    assert not kinds(ev, "handler_started") and answers(ev, 1) == []


def _cancel_during_sampling(ev: Events) -> None:
    [applied] = kinds(ev, "cancel_applied")
    assert applied["stage"] == "running" and applied["why"] == "user pressed stop"
    local = [e for e in kinds(ev, "cancel_requested") if e["by"] == "local"]
    assert len(local) == 1
    assert any("cancelled request" in e["reason"] for e in kinds(ev, "message_dropped"))
    assert answers(ev, 1) == []


def _progress_race(ev: Events) -> None:
    out = [e["msg"] for e in kinds(ev, "message_out")]
    progress = [i for i, m in enumerate(out) if m.get("method") == "notifications/progress"]
    final = next(i for i, m in enumerate(out) if m.get("id") == 1 and "result" in m)
    assert len(progress) == 3 and max(progress) < final


def _timeout_same_instant(ev: Events) -> None:
    [fired] = kinds(ev, "timer_fired")
    answer = next(e for e in ev if e["kind"] == "message_in" and "result" in e["msg"])
    assert answer["t"] == fired["t"] == 1.0
    text = answers(ev, 1)[0]["result"]["content"][0]["text"]
    # The timer fired first: the tool saw a timeout and the late answer was dropped.
    assert fired["seq"] < answer["seq"] and text == "timed out"


def _client_disconnect(ev: Events) -> None:
    assert kinds(ev, "transport_closed")
    [applied] = kinds(ev, "cancel_applied")
    assert applied["by"] == "supervisor" and applied["why"] == "end of input"
    assert answers(ev, 1) == []


def _duplicate_id(ev: Events) -> None:
    first, second = answers(ev, 7)
    assert first["error"]["code"] == -32600 and "already in use" in first["error"]["message"]
    assert second["result"]["content"][0]["text"] == "slept 1"


def _cancel_unknown(ev: Events) -> None:
    [dropped] = kinds(ev, "message_dropped")
    assert "999" in dropped["reason"]
    assert answers(ev, 1)[0]["result"]["content"][0]["text"] == "quick"


def _reverse_responses(ev: Events) -> None:
    label = {
        e["msg"]["id"]: e["msg"]["params"]["messages"][0]["content"]["text"]
        for e in kinds(ev, "message_out") if e["msg"].get("method") == "sampling/createMessage"
    }
    replies = [label[e["msg"]["id"]] for e in kinds(ev, "message_in") if "result" in e["msg"]
               and "method" not in e["msg"] and e["msg"]["id"] in label]
    assert replies == ["second", "first"]  # answered in the reverse order of asking
    assert answers(ev, 1)[0]["result"]["content"][0]["text"] == "second,first"


def _crash_mid_stream(ev: Events) -> None:
    out = [e["msg"] for e in kinds(ev, "message_out")]
    assert sum(m.get("method") == "notifications/progress" for m in out) == 2
    result = answers(ev, 1)[0]["result"]
    assert result["isError"] is True and "crashed after 2" in result["content"][0]["text"]


def _racy_withdraw(ev: Events) -> None:
    balances = [a["result"]["structuredContent"]["balance"] for r in (1, 2)
                for a in answers(ev, r)]
    assert min(balances) == -60  # the bug: both withdrawals of 80 from 100 went through


def _slow_progress(ev: Events) -> None:
    assert ev[-1]["t"] == 10.0
    assert answers(ev, 1)[0]["result"]["content"][0]["text"] == "done"


def _client_side_first_done_first(ev: Events) -> None:
    # The client's two calls were answered in the reverse order; its check failed.
    ids = {e["msg"]["params"]["arguments"]["seconds"]: e["msg"]["id"]
           for e in kinds(ev, "message_out") if e["msg"].get("method") == "tools/call"}
    answered = [e["msg"]["id"] for e in kinds(ev, "message_in") if "result" in e["msg"]]
    assert answered[-2:] == [ids[0.1], ids[0.5]]
    [failed] = kinds(ev, "client_failed")
    assert failed["error"] == "AssertionError(\"answers came back as ['short', 'long']\")"


def _client_side_timeout_same_instant(ev: Events) -> None:
    [fired] = kinds(ev, "timer_fired")
    answer = next(e for e in kinds(ev, "message_in") if e["msg"].get("id") == 2)
    assert answer["t"] == fired["t"] == 1.0 and fired["seq"] < answer["seq"]
    # The timer won: the late answer was dropped, and the client's next call says so.
    assert "cancelled request 2" in kinds(ev, "message_dropped")[0]["reason"]
    calls = [e["msg"] for e in kinds(ev, "message_out") if e["msg"].get("method") == "tools/call"]
    assert calls[-1]["params"]["arguments"] == {"seconds": 0.0}


def _task_events(ev: Events, kind: str) -> Events:
    return [e for e in kinds(ev, kind) if str(e.get("actor", "")).startswith("task:")]


def _task_cancel_wins(ev: Events) -> None:
    [created] = _task_events(ev, "task_created")
    [requested] = _task_events(ev, "task_cancel_requested")
    [finished] = _task_events(ev, "task_finished")
    # The cancellation reached the task before its work ended: it stays cancelled.
    assert requested["applied"] is True and finished["outcome"] == "cancelled"
    assert created["seq"] < requested["seq"] < finished["seq"] and finished["t"] == 1.0
    assert answers(ev, 2)[0]["result"]["status"] == "cancelled"
    assert answers(ev, 3)[0]["result"]["status"] == "cancelled"
    error = answers(ev, 4)[0]["error"]
    assert error["code"] == -32603 and "was cancelled" in error["message"]


def _task_completion_wins(ev: Events) -> None:
    [finished] = _task_events(ev, "task_finished")
    [requested] = _task_events(ev, "task_cancel_requested")
    # The work ended first: the cancellation is refused, the result stands.
    assert finished["outcome"] == "completed" and finished["seq"] < requested["seq"]
    assert requested["applied"] is False and requested["status"] == "completed"
    error = answers(ev, 2)[0]["error"]
    assert error["code"] == -32602 and "terminal status 'completed'" in error["message"]
    assert answers(ev, 3)[0]["result"]["status"] == "completed"
    result = answers(ev, 4)[0]["result"]
    assert result["content"][0]["text"] == "finished after 1.0"


def _task_ext_cancel_wins(ev: Events) -> None:
    [created] = _task_events(ev, "task_created")
    [requested] = _task_events(ev, "task_cancel_requested")
    [finished] = _task_events(ev, "task_finished")
    # 2026-07-28: the task was made by the server for a plain tools/call that declared
    # the extension; the cancellation got in first and the task stays cancelled.
    assert answers(ev, 1)[0]["result"]["resultType"] == "task"
    assert requested["applied"] is True and finished["outcome"] == "cancelled"
    assert created["seq"] < requested["seq"] < finished["seq"] and finished["t"] == 1.0
    ack = answers(ev, 2)[0]["result"]
    assert ack["resultType"] == "complete" and "status" not in ack and "taskId" not in ack
    got = answers(ev, 3)[0]["result"]
    assert got["status"] == "cancelled" and "result" not in got and "error" not in got


def _task_ext_completion_wins(ev: Events) -> None:
    [finished] = _task_events(ev, "task_finished")
    [requested] = _task_events(ev, "task_cancel_requested")
    # The work ended first: the cancel is acknowledged all the same (idempotent in the
    # extension), and tasks/get carries the result, without the related-task _meta.
    assert finished["outcome"] == "completed" and finished["seq"] < requested["seq"]
    assert requested["applied"] is False and requested["status"] == "completed"
    ack = answers(ev, 2)[0]["result"]
    assert ack["resultType"] == "complete" and "status" not in ack
    got = answers(ev, 3)[0]["result"]
    assert got["status"] == "completed" and got["resultType"] == "complete"
    assert got["result"]["content"][0]["text"] == "finished after 1.0"
    assert "_meta" not in got["result"]


OUTCOMES: dict[str, Callable[[Events], None]] = {
    "late_cancel": _late_cancel,
    "cancel_before_start": _cancel_before_start,
    "cancel_during_sampling": _cancel_during_sampling,
    "progress_race": _progress_race,
    "timeout_same_instant": _timeout_same_instant,
    "client_disconnect": _client_disconnect,
    "duplicate_id": _duplicate_id,
    "cancel_unknown": _cancel_unknown,
    "reverse_responses": _reverse_responses,
    "crash_mid_stream": _crash_mid_stream,
    "racy_withdraw": _racy_withdraw,
    "slow_progress": _slow_progress,
    "client_side_first_done_first": _client_side_first_done_first,
    "client_side_timeout_same_instant": _client_side_timeout_same_instant,
    "task_cancel_wins": _task_cancel_wins,
    "task_completion_wins": _task_completion_wins,
    "task_ext_cancel_wins": _task_ext_cancel_wins,
    "task_ext_completion_wins": _task_ext_completion_wins,
}

#: Races recorded after trace format version 2 have no version-1 copy.
V1 = {p.stem for p in (TRACES / "v1").glob("*.jsonl")}


def test_every_corpus_trace_has_an_outcome_check() -> None:
    assert {p.stem for p in TRACES.glob("*.jsonl")} == set(OUTCOMES)
    assert V1 <= set(OUTCOMES) and not V1 & {"task_cancel_wins", "task_completion_wins",
                                              "task_ext_cancel_wins",
                                              "task_ext_completion_wins"}


@pytest.mark.parametrize(("name", "version"),
                         [(n, "") for n in sorted(OUTCOMES)] + [(n, "v1") for n in sorted(V1)])
def test_corpus_trace_replays_exactly_with_its_recorded_outcome(name: str, version: str) -> None:
    logging.disable(logging.CRITICAL)  # the crash scenario logs its traceback by design
    try:
        trace = load_trace(TRACES / version / f"{name}.jsonl")
        assert trace.version == (1 if version else 2)
        recorded = [ev.data for ev in trace.events]
        OUTCOMES[name](recorded)  # the race was recorded as the scenario intends
        result = replay(trace)
    finally:
        logging.disable(logging.NOTSET)
    assert result.divergence is None, result.divergence
    assert result.mode == "exact"
    assert result.reproduced == len(trace.events)
    OUTCOMES[name](events_of(result.output))  # ... and the replay shows it again
