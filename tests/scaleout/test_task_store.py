"""SharedTaskStore over MemoryState (the same code as over Redis): pages, cursors,
compare-and-set transitions, waiting, and a task whose worker's liveness key is gone."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio

from mcpactor.protocol.errors import InvalidParams
from mcpactor.scaleout.state import MemoryState
from mcpactor.scaleout.task_store import WORKER_GONE_MESSAGE, SharedTaskStore
from mcpactor.tasks.store import TaskRecord


def _record(task_id: str, session: str = "s1") -> TaskRecord:
    now = time.time()
    return TaskRecord(task_id=task_id, method="tools/call", owner=None, session=session,
                      status="working", created_at=now, updated_at=now, ttl_ms=60_000)


async def test_pages_transitions_and_waits() -> None:
    state = MemoryState()
    here = SharedTaskStore(state, worker="w1")
    there = SharedTaskStore(state, worker="w2")
    await state.set("mcpactor:w:w1", b"1")
    for i in range(5):
        await here.create(_record(f"t{i}"))
    await here.create(_record("other", session="s2"))
    with pytest.raises(ValueError, match="already in use"):
        await here.create(_record("t0"))
    page, cursor = await there.list(owner=None, session="s1", cursor=None, limit=2)
    seen = [r.task_id for r in page]
    while cursor is not None:
        page, cursor = await there.list(owner=None, session="s1", cursor=cursor, limit=2)
        seen += [r.task_id for r in page]
    assert seen == [f"t{i}" for i in range(5)]
    with pytest.raises(InvalidParams):
        await there.list(owner=None, session="s1", cursor="bogus", limit=2)
    # A change made on one worker wakes a wait on another.
    async with trio.open_nursery() as nursery:
        got: list[TaskRecord | None] = []

        async def waiter() -> None:
            got.append(await there.wait("t1", 0))

        nursery.start_soon(waiter)
        await trio.sleep(0.05)
        new, changed = await here.transition("t1", status="completed", status_message=None,
                                             result={"content": []})
    assert changed and got and got[0] == new and got[0] is not None
    assert got[0].version == 1 and got[0].result == {"content": []}
    assert await there.transition("t1", status="failed", status_message="x") == (new, False)


async def test_a_task_of_a_stopped_worker_is_failed_on_read() -> None:
    state = MemoryState()
    gone = SharedTaskStore(state, worker="gone")
    reader = SharedTaskStore(state, worker="reader")
    await gone.create(_record("t"))
    record = await reader.get("t")  # no liveness key for "gone"
    assert record is not None and record.status == "failed"
    assert record.status_message == WORKER_GONE_MESSAGE
    assert record.error is not None and record.error["data"] == {"worker": "gone"}


async def test_a_cancel_reaches_the_running_worker() -> None:
    state = MemoryState()
    runner = SharedTaskStore(state, worker="runner")
    other = SharedTaskStore(state, worker="other")
    await state.set("mcpactor:w:runner", b"1")
    await runner.create(_record("t"))
    told: list[dict[str, Any]] = []
    heard = trio.Event()

    async def handle(message: dict[str, Any]) -> None:
        told.append(message)
        heard.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.serve_control, handle)
        await other.transition("t", status="cancelled", status_message="by request")
        with trio.fail_after(2):
            await heard.wait()
        nursery.cancel_scope.cancel()
    assert told == [{"k": "cancel", "task": "t"}]
    # A cancel made by the running worker itself goes in no log.
    await runner.create(_record("u"))
    await runner.transition("u", status="cancelled", status_message="by request")
    assert len(await state.read_range("mcpactor:tx:runner", "0")) == 1  # "t"'s only


async def test_the_task_log_is_read_in_order_past_a_bad_message() -> None:
    state = MemoryState()
    runner = SharedTaskStore(state, worker="runner")
    await state.append("mcpactor:tx:runner", {"j": b"not json"}, max_len=10)
    for n in range(3):
        await runner.send_control("runner", {"k": "x", "n": n})
    told: list[int] = []
    done = trio.Event()

    async def handle(message: dict[str, Any]) -> None:
        told.append(message["n"])
        if len(told) == 3:
            done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.serve_control, handle)
        with trio.fail_after(2):
            await done.wait()
        nursery.cancel_scope.cancel()
    assert told == [0, 1, 2]
