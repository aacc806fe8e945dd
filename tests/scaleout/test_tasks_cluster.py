"""Tasks behind a round-robin balancer: three ``mcpactor run --redis`` workers keep
their tasks in Redis (chosen by ``--redis`` alone). A session of one worker creates a
task; sessions of other workers read it, wait for its result and cancel it (the cancel
reaches the worker running it); a task whose worker is killed with SIGKILL is reported
failed, not left working."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
import trio
from scaleout_support import Deployment, deploy

from mcpactor import Client, connect_http

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    yield from deploy(tmp_path)


def _text(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


async def _pid(client: Client) -> int:
    return int(_text(await client.call_tool("whoami", {})))


@asynccontextmanager
async def two_owners(url: str) -> AsyncIterator[tuple[Client, int, Client, int]]:
    """Two legacy sessions owned by different workers, and their owners' pids."""
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(connect_http(url, mode="legacy"))
        first_pid = await _pid(first)
        for _ in range(6):
            other = await stack.enter_async_context(connect_http(url, mode="legacy"))
            other_pid = await _pid(other)
            if other_pid != first_pid:
                yield first, first_pid, other, other_pid
                return
        raise AssertionError("every session landed on one worker")


async def _running_here(client: Client) -> int:
    return int(_text(await client.call_tool("running_tasks", {})).split(":")[1])


async def test_other_workers_read_wait_for_and_cancel_a_task(deployment: Deployment) -> None:
    with trio.fail_after(60):
        async with two_owners(deployment.url) as (a, a_pid, b, _b_pid):
            handle = await a.call_tool_task("job", {"seconds": 60}, ttl=120)
            task_id = handle.task_id
            # Read on the other worker, from the shared store: working, on a's worker.
            while "running in" not in ((seen := await b.get_task(task_id)).status_message  # noqa: ASYNC110 - polling a server
                                       or ""):
                await trio.sleep(0.05)
            assert seen.status == "working"
            assert seen.status_message == f"running in {a_pid}"
            assert await _running_here(a) == 1 and await _running_here(b) == 0
            # Cancelled from the other worker: recorded at once, and a's worker stops it.
            cancelled = await b.cancel_task(task_id)
            assert cancelled.status == "cancelled"
            with trio.fail_after(5):
                while await _running_here(a) != 0:  # noqa: ASYNC110 - polling a server
                    await trio.sleep(0.05)
            assert (await a.get_task(task_id)).status == "cancelled"
            # tasks/result waiting on the other worker hears a's task finish.
            short = await a.call_tool_task("job", {"seconds": 1}, ttl=120)
            result = await (await b.task(short.task_id, tool="job")).result()
            assert _text(result) == f"done in {a_pid}"
            # The creating session lists both (its requests reach its owner, which
            # reads them from the shared store too).
            listed = {t.task_id: t.status for t in (await a.list_tasks()).tasks}
            assert listed == {task_id: "cancelled", short.task_id: "completed"}


async def test_a_task_whose_worker_is_killed_is_reported_failed(
    deployment: Deployment,
) -> None:
    with trio.fail_after(60):
        async with two_owners(deployment.url) as (a, a_pid, b, _b_pid):
            handle = await a.call_tool_task("job", {"seconds": 120}, ttl=300)
            task_id = handle.task_id
            while (await b.get_task(task_id)).status_message != f"running in {a_pid}":  # noqa: ASYNC110 - polling a server
                await trio.sleep(0.05)
            waiting = await b.task(task_id, tool="job")
            outcome: list[BaseException] = []

            async def wait_result() -> None:
                try:
                    await waiting.result()
                except Exception as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_result)
                await trio.sleep(0.3)
                os.kill(a_pid, signal.SIGKILL)
            # The waiting tasks/result (on b's worker) ends once a's liveness key expires.
            assert outcome and "stopped before it finished" in str(outcome[0]), outcome
            task = await b.get_task(task_id)
            assert task.status == "failed"
            assert task.status_message == "the worker running the task stopped before it finished"
            # a's session is taken over by another worker, which lists the task failed.
            listed = {t.task_id: t.status for t in (await a.list_tasks()).tasks}
            assert listed == {task_id: "failed"}


async def test_2026_tasks_are_read_and_cancelled_wherever_requests_land(
    deployment: Deployment,
) -> None:
    """The tasks extension of 2026-07-28 behind the balancer: no session, so every
    request (the tools/call, each tasks/get, the tasks/cancel) lands on any worker; the
    shared store answers, and the cancel reaches the worker running the task."""
    with trio.fail_after(60):
        async with connect_http(deployment.url) as client:
            assert client.stateless
            handle = await client.call_tool_task("job", {"seconds": 60})
            assert handle.extension
            while "running in" not in (handle.status_message or ""):
                await handle.refresh()
                await trio.sleep(0.05)
            runner = int((handle.status_message or "").split()[-1])
            for _ in range(6):  # read on every worker in turn
                seen = await client.get_task(handle.task_id)
                assert seen.status == "working"
                assert seen.status_message == f"running in {runner}"
            assert (await handle.cancel()).status == "cancelled"
            # The worker running it stops its work (the cancel may have landed elsewhere).
            counts: dict[int, int] = {}
            while counts.get(runner) != 0:
                pid, count = _text(await client.call_tool("running_tasks", {})).split(":")
                counts[int(pid)] = int(count)
                await trio.sleep(0.05)
            short = await client.call_tool_task("job", {"seconds": 0.5})
            done = _text(await short.result())
            assert done.startswith("done in ")
            # A plain call of a task tool is followed to its result, across workers.
            assert _text(await client.call_tool("job", {"seconds": 0.2})).startswith("done in ")
