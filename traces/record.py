"""Record the race corpus: real sessions of the runtime, one per race.

    python traces/record.py            # (re)record every trace in traces/
    python traces/record.py late_cancel cancel_before_start

Each scenario drives ``traces/servers/race_server.py`` with a scripted client on an
in-memory pipe, under Trio's virtual clock, and checks that the race came out the way
the scenario is about (the ``client_side_*`` scenarios record the client's side instead:
real client code from ``clients/race_clients.py`` against the race server); where the outcome depends on scheduling, seeds are tried in
turn until one produces it (the seed is in the trace header).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio
import trio.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from peer import Peer, call_msg, cancel_msg, drain, peer_pair, sampling_answer  # noqa: E402

from mcpactor.entrypoint import load_entry_point  # noqa: E402
from mcpactor.tracing import Recorder, TraceHeader  # noqa: E402

ENTRY_POINT = "servers/race_server.py:server"
TASK_ENTRY_POINT = "servers/task_race_server.py:server"
SAMPLING = {"sampling": {}}

Events = list[dict[str, Any]]


@attrs.frozen
class Scenario:
    """A script for the client, and the check that the race happened as intended."""

    script: Callable[[Peer], Awaitable[None]]
    check: Callable[[Events], bool]
    doc: str
    #: The server it drives (relative to traces/).
    entry: str = ENTRY_POINT


def kinds(events: Events, kind: str) -> Events:
    """The events of one kind."""
    return [e for e in events if e["kind"] == kind]


def out_msgs(events: Events) -> list[dict[str, Any]]:
    """Every message the server sent."""
    return [e["msg"] for e in events if e["kind"] == "message_out"]


def answers(events: Events, rid: Any) -> list[dict[str, Any]]:
    """The server's responses to the client's request ``rid``."""
    return [m for m in out_msgs(events) if m.get("id") == rid and "method" not in m]


def index_of(events: Events, pred: Callable[[dict[str, Any]], bool]) -> int:
    """Position of the first event matching ``pred`` (-1 if none)."""
    return next((i for i, e in enumerate(events) if pred(e)), -1)


# -- the scenarios ------------------------------------------------------------------------


async def late_cancel(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(1, "quick")
    await peer.until(rid=1)
    await peer.cancel(1, "too late")
    await trio.sleep(0.5)


def check_late_cancel(ev: Events) -> bool:
    out = index_of(ev, lambda e: e["kind"] == "message_out" and e["msg"].get("id") == 1
                   and "method" not in e["msg"])
    drop = index_of(ev, lambda e: e["kind"] == "message_dropped")
    return 0 <= out < drop and not kinds(ev, "cancel_applied")


async def cancel_before_start(peer: Peer) -> None:
    await peer.initialize()
    await peer.send(call_msg(1, "sleepy", {"seconds": 5}), cancel_msg(1, "never mind"))
    await trio.sleep(1)


def check_cancel_before_start(ev: Events) -> bool:
    return [e["stage"] for e in kinds(ev, "cancel_applied")] == ["before_start"]


async def cancel_during_sampling(peer: Peer) -> None:
    await peer.initialize(SAMPLING)
    await peer.call(1, "ask_model", {"prompt": "hello"})
    ask = await peer.until(method="sampling/createMessage")
    await trio.sleep(0.25)
    await peer.cancel(1, "user pressed stop")
    await peer.until(method="notifications/cancelled")
    await trio.sleep(0.25)
    await peer.answer(ask["id"], sampling_answer("too late"))
    await trio.sleep(0.5)


def check_cancel_during_sampling(ev: Events) -> bool:
    applied = kinds(ev, "cancel_applied")
    local = [e for e in kinds(ev, "cancel_requested") if e["by"] == "local"]
    return len(applied) == 1 and applied[0]["stage"] == "running" and len(local) == 1


async def progress_race(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(1, "burst", {"steps": 3}, progress="p1")
    await peer.until(rid=1)
    await trio.sleep(0.1)


def check_progress_race(ev: Events) -> bool:
    msgs = out_msgs(ev)
    final = index_of(msgs, lambda m: m.get("id") == 1 and "method" not in m)
    progress = [i for i, m in enumerate(msgs) if m.get("method") == "notifications/progress"]
    return len(progress) == 3 and final > max(progress)


async def timeout_same_instant(peer: Peer) -> None:
    await peer.initialize(SAMPLING)
    await peer.call(1, "ask_with_timeout", {"prompt": "quick!", "seconds": 1.0})
    ask = await peer.until(method="sampling/createMessage")
    await trio.sleep(1.0)  # answer at the very instant the server's timeout fires
    await peer.answer(ask["id"], sampling_answer("photo finish"))
    await peer.until(rid=1)
    await trio.sleep(0.1)


def check_timeout_same_instant(ev: Events) -> bool:
    fired = kinds(ev, "timer_fired")
    answer = index_of(ev, lambda e: e["kind"] == "message_in" and "result" in e["msg"])
    return len(fired) == 1 and answer >= 0 and ev[answer]["t"] == fired[0]["t"]


async def client_disconnect(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(1, "sleepy", {"seconds": 10})
    await trio.sleep(1)
    peer.close()


def check_client_disconnect(ev: Events) -> bool:
    applied = kinds(ev, "cancel_applied")
    return bool(kinds(ev, "transport_closed")) and [a["by"] for a in applied] == ["supervisor"]


async def duplicate_id(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(7, "sleepy", {"seconds": 1})
    await peer.call(7, "quick")
    await peer.until(rid=7)
    await peer.until(rid=7)


def check_duplicate_id(ev: Events) -> bool:
    got = answers(ev, 7)
    return len(got) == 2 and got[0].get("error", {}).get("code") == -32600


async def cancel_unknown(peer: Peer) -> None:
    await peer.initialize()
    await peer.cancel(999, "who?")
    await peer.call(1, "quick")
    await peer.until(rid=1)


def check_cancel_unknown(ev: Events) -> bool:
    return len(kinds(ev, "message_dropped")) == 1 and not kinds(ev, "cancel_applied")


async def reverse_responses(peer: Peer) -> None:
    await peer.initialize(SAMPLING)
    await peer.call(1, "ask_twice")
    asks = [await peer.until(method="sampling/createMessage") for _ in range(2)]
    by_label = {a["params"]["messages"][0]["content"]["text"]: a["id"] for a in asks}
    await trio.sleep(0.1)
    await peer.answer(by_label["second"], sampling_answer("2"))
    await trio.sleep(0.1)
    await peer.answer(by_label["first"], sampling_answer("1"))
    await peer.until(rid=1)


def check_reverse_responses(ev: Events) -> bool:
    final = answers(ev, 1)
    return bool(final) and final[0]["result"]["content"][0]["text"] == "second,first"


async def crash_mid_stream(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(1, "crash_mid_stream", {"steps": 2}, progress="c1")
    await peer.until(rid=1)


def check_crash_mid_stream(ev: Events) -> bool:
    final = answers(ev, 1)
    progress = [m for m in out_msgs(ev) if m.get("method") == "notifications/progress"]
    # A tool's exception becomes an isError result (the session lives on).
    return len(progress) == 2 and bool(final) and final[0]["result"].get("isError") is True


async def racy_withdraw(peer: Peer) -> None:
    await peer.initialize()
    await peer.send(call_msg(1, "withdraw", {"amount": 80}), call_msg(2, "withdraw", {"amount": 80}))
    await peer.until(rid=1)
    await peer.until(rid=2)


def withdraw_bug(ev: Events) -> bool:
    """Both withdrawals of 80 from 100 succeeded: the balance went negative."""
    balances = [
        m["result"]["structuredContent"]["balance"]
        for rid in (1, 2)
        for m in answers(ev, rid)
        if "result" in m
    ]
    return any(b < 0 for b in balances)


async def slow_progress(peer: Peer) -> None:
    await peer.initialize()
    await peer.call(1, "slow", {"steps": 10, "every": 1.0}, progress="s1")
    await peer.until(rid=1)


def check_slow_progress(ev: Events) -> bool:
    return ev[-1]["t"] >= 10.0


async def _task_cancel_race(peer: Peer) -> None:
    """A task whose work ends a few steps after t=1 and a tasks/cancel sent at t=1
    (2025-11-25); then the task's state and its result."""
    await peer.request(0, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "race-peer", "version": "1.0"}})
    await peer.until(rid=0)
    await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    # Two steps after its sleep: about as many as the cancellation takes to get in.
    await peer.request(1, "tools/call", {"name": "finish_soon",
                                         "arguments": {"seconds": 1.0, "steps": 2},
                                         "task": {"ttl": 60000}})
    created = await peer.until(rid=1)
    task_id = created["result"]["task"]["taskId"]
    await trio.sleep(1.0)  # the very instant the task's work ends
    await peer.request(2, "tasks/cancel", {"taskId": task_id})
    await peer.until(rid=2)
    await peer.request(3, "tasks/get", {"taskId": task_id})
    await peer.until(rid=3)
    await peer.request(4, "tasks/result", {"taskId": task_id})
    await peer.until(rid=4)


def _task_outcome(ev: Events) -> str | None:
    finished = [e for e in ev if e["kind"] == "task_finished"]
    return finished[0]["outcome"] if len(finished) == 1 else None


def check_task_cancel_wins(ev: Events) -> bool:
    """The cancellation got to the task before its work ended: cancelled at its next
    step, the task stays cancelled."""
    cancel = answers(ev, 2)
    return (_task_outcome(ev) == "cancelled" and bool(cancel)
            and cancel[0].get("result", {}).get("status") == "cancelled")


def check_task_completion_wins(ev: Events) -> bool:
    """The task completed first: the cancellation is refused (-32602)."""
    cancel = answers(ev, 2)
    return (_task_outcome(ev) == "completed" and bool(cancel)
            and cancel[0].get("error", {}).get("code") == -32602)


#: The ``_meta`` of a 2026-07-28 request that declares the tasks extension.
_MODERN_TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "race-peer", "version": "1.0"},
}


async def _task_ext_cancel_race(peer: Peer) -> None:
    """The same race in the 2026-07-28 tasks extension (SEP-2663): no handshake, the
    server makes the task (the client only declares the extension), the cancel is an
    acknowledgement whichever wins, and tasks/get tells the outcome (the result
    inlined, or cancelled)."""

    def params(**fields: Any) -> dict[str, Any]:
        return {**fields, "_meta": _MODERN_TASKS_META}

    await peer.request(1, "tools/call", params(name="finish_soon",
                                                arguments={"seconds": 1.0, "steps": 2}))
    created = await peer.until(rid=1)
    task_id = created["result"]["taskId"]
    await trio.sleep(1.0)  # the very instant the task's work ends
    await peer.request(2, "tasks/cancel", params(taskId=task_id))
    await peer.until(rid=2)
    await peer.request(3, "tasks/get", params(taskId=task_id))
    await peer.until(rid=3)


def check_task_ext_cancel_wins(ev: Events) -> bool:
    """2026-07-28: the cancellation got in first; tasks/get says cancelled."""
    got = answers(ev, 3)
    return (_task_outcome(ev) == "cancelled" and bool(got)
            and got[0].get("result", {}).get("status") == "cancelled")


def check_task_ext_completion_wins(ev: Events) -> bool:
    """2026-07-28: the work ended first; the cancel is still acknowledged, and
    tasks/get has the result inlined."""
    got = answers(ev, 3)
    return (_task_outcome(ev) == "completed" and bool(got)
            and got[0].get("result", {}).get("status") == "completed")


SCENARIOS: dict[str, Scenario] = {
    "late_cancel": Scenario(late_cancel, check_late_cancel,
                            "a cancellation arriving after the response was sent"),
    "cancel_before_start": Scenario(cancel_before_start, check_cancel_before_start,
                                    "a cancellation that lands before the handler starts"),
    "cancel_during_sampling": Scenario(cancel_during_sampling, check_cancel_during_sampling,
                                       "a cancellation while the handler awaits sampling"),
    "progress_race": Scenario(progress_race, check_progress_race,
                              "progress notifications racing the final response"),
    "timeout_same_instant": Scenario(timeout_same_instant, check_timeout_same_instant,
                                     "a timeout firing at the instant the response arrives"),
    "client_disconnect": Scenario(client_disconnect, check_client_disconnect,
                                  "the client disconnects mid-request"),
    "duplicate_id": Scenario(duplicate_id, check_duplicate_id,
                             "a request id reused while the first is in flight"),
    "cancel_unknown": Scenario(cancel_unknown, check_cancel_unknown,
                               "a cancellation for an id that never existed"),
    "reverse_responses": Scenario(reverse_responses, check_reverse_responses,
                                  "two server-to-client requests answered in reverse order"),
    "crash_mid_stream": Scenario(crash_mid_stream, check_crash_mid_stream,
                                 "a handler that crashes after streaming progress"),
    "racy_withdraw": Scenario(racy_withdraw, withdraw_bug,
                              "check-then-act across an await: the balance goes negative"),
    "slow_progress": Scenario(slow_progress, check_slow_progress,
                              "ten seconds of sleeps with progress (replay speed)"),
    "task_cancel_wins": Scenario(
        _task_cancel_race, check_task_cancel_wins,
        "tasks/cancel and a task's completion at one instant: the cancel wins",
        TASK_ENTRY_POINT),
    "task_completion_wins": Scenario(
        _task_cancel_race, check_task_completion_wins,
        "tasks/cancel and a task's completion at one instant: the completion wins",
        TASK_ENTRY_POINT),
    "task_ext_cancel_wins": Scenario(
        _task_ext_cancel_race, check_task_ext_cancel_wins,
        "2026-07-28 tasks extension: tasks/cancel and the completion at one instant, "
        "the cancel wins", TASK_ENTRY_POINT),
    "task_ext_completion_wins": Scenario(
        _task_ext_cancel_race, check_task_ext_completion_wins,
        "2026-07-28 tasks extension: tasks/cancel and the completion at one instant, "
        "the completion wins", TASK_ENTRY_POINT),
}


# -- client-side scenarios: the client records, its code is the entry point -------------


def check_client_side_first_done_first(ev: Events) -> bool:
    failed = kinds(ev, "client_failed")
    return len(failed) == 1 and "answers came back as ['short', 'long']" in failed[0]["error"]


def check_client_side_timeout_same_instant(ev: Events) -> bool:
    fired = kinds(ev, "timer_fired")
    answer = index_of(ev, lambda e: e["kind"] == "message_in" and e["msg"].get("id") == 2)
    return len(fired) == 1 and answer >= 0 and ev[answer]["t"] == fired[0]["t"]


@attrs.frozen
class ClientScenario:
    """Client code (``clients/race_clients.py:NAME``) run against the race server with
    the client recording, and the check that the race happened as intended."""

    check: Callable[[Events], bool]
    doc: str


CLIENT_SCENARIOS: dict[str, ClientScenario] = {
    "client_side_first_done_first": ClientScenario(
        check_client_side_first_done_first,
        "client check-then-act: it assumes the first call it made is answered first"),
    "client_side_timeout_same_instant": ClientScenario(
        check_client_side_timeout_same_instant,
        "a client's request timeout firing at the instant the answer arrives"),
}
CLIENT_CODE = "clients/race_clients.py"


async def _client_session(path: Path, seed: int, name: str, entry: str) -> None:
    from mcpactor.client import connect_transport
    from mcpactor.transports.memory import memory_pair

    server = load_entry_point(f"{HERE / ENTRY_POINT.partition(':')[0]}:server")
    main = load_entry_point(f"{HERE / CLIENT_CODE}:{name.removeprefix('client_side_')}")
    server_side, client_side = memory_pair()
    recorder = _recorder(path, "client", entry, seed)
    async with recorder.recording(), trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, server_side)
        try:
            with trio.fail_after(3600):
                async with connect_transport(client_side, tracer=recorder,
                                             session_id=name, mode="legacy") as client:
                    await main(client)
        except AssertionError:
            pass  # the client's own bug, traced as client_failed: what the scenario is for
        nursery.cancel_scope.cancel()


def _run_client_once(name: str, seed: int, path: Path) -> Events:
    attr = name.removeprefix("client_side_")
    entry = f"{CLIENT_CODE}:{attr}"
    if path.resolve().parent != HERE:
        entry = f"{HERE / CLIENT_CODE}:{attr}"
    trio.run(_client_session, path, seed, name, entry,
             clock=trio.testing.MockClock(autojump_threshold=0))
    return _events(path)


def _recorder(path: Path, role: str, entry: str, seed: int) -> Recorder:
    """A recorder for one scenario run: the seed drives the order in which the recorded
    run's tasks take their steps (Trio's coin) and the tasks' ``random``."""
    from trio._core import _run

    _run._r.seed(seed)
    return Recorder(TraceHeader(role=role, transport="memory", entry_point=entry,
                                seeds={"random": seed}), path)


def _events(path: Path) -> Events:
    """The events of a recorded trace (the header and the schedule's records left out)."""
    return [e for e in map(orjson.loads, path.read_bytes().splitlines()[1:])
            if e["kind"] not in ("sched", "read")]


async def _session(scenario: Scenario, path: Path, seed: int, name: str, entry: str) -> None:
    # A fresh module per recording: module state (the bank) starts as the replay's does.
    server = load_entry_point(f"{HERE / scenario.entry.partition(':')[0]}:server")
    transport, peer = peer_pair()
    recorder = _recorder(path, "server", entry, seed)
    async with recorder.recording(), trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(transport, tracer=recorder, session_id=name))
        with trio.fail_after(3600):
            await scenario.script(peer)
        peer.close()
        await drain(peer)


def run_once(name: str, seed: int, path: Path) -> Events:
    """Record scenario ``name`` with ``seed`` to ``path``; return its events."""
    if name in CLIENT_SCENARIOS:
        return _run_client_once(name, seed, path)
    # Relative to the trace file inside traces/ (the corpus moves with the checkout);
    # absolute for traces written elsewhere (tests).
    scenario = SCENARIOS[name]
    entry = scenario.entry
    if path.resolve().parent != HERE:
        entry = f"{HERE / scenario.entry.partition(':')[0]}:server"
    trio.run(_session, scenario, path, seed, name, entry,
             clock=trio.testing.MockClock(autojump_threshold=0))
    return _events(path)


def record(name: str, directory: Path = HERE, max_seeds: int = 500) -> int:
    """Record ``name`` into ``directory``, trying seeds until the race comes out as
    intended; returns the seed used."""
    path = directory / f"{name}.jsonl"
    check = (CLIENT_SCENARIOS[name] if name in CLIENT_SCENARIOS else SCENARIOS[name]).check
    for seed in range(1, max_seeds + 1):
        if check(run_once(name, seed, path)):
            return seed
    path.unlink()
    raise RuntimeError(f"{name}: no seed in 1..{max_seeds} produced the intended race")


def main(argv: list[str]) -> int:
    import logging

    logging.disable(logging.CRITICAL)  # the crash scenario logs its traceback by design
    names = argv or [*SCENARIOS, *CLIENT_SCENARIOS]
    for name in names:
        seed = record(name)
        doc = (CLIENT_SCENARIOS[name] if name in CLIENT_SCENARIOS else SCENARIOS[name]).doc
        print(f"{name:<34} seed {seed:<4} {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
