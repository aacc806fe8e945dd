"""Tasks behind a round-robin balancer: three ``mcpactor run --redis`` workers keep
their tasks in Redis (chosen by ``--redis`` alone). A session of one worker creates a
task; sessions of other workers read it, wait for its result and cancel it (the cancel
reaches the worker running it, and the status change reaches the requestors of both
workers); a task's question reaches a requestor whose session another worker holds; a
task whose worker is killed with SIGKILL is reported failed, not left working."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
import trio
from scaleout_support import Deployment, deploy

from mcpactor import Client, ClientHandlers, connect_http
from mcpactor.protocol import types as t

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    yield from deploy(tmp_path)


def _text(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


async def _pid(client: Client) -> int:
    return int(_text(await client.call_tool("whoami", {})))


@asynccontextmanager
async def two_owners(
    url: str, first_handlers: ClientHandlers | None = None,
    other_handlers: ClientHandlers | None = None,
) -> AsyncIterator[tuple[Client, int, Client, int]]:
    """Two legacy sessions owned by different workers, and their owners' pids."""
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(
            connect_http(url, mode="legacy", handlers=first_handlers))
        first_pid = await _pid(first)
        for _ in range(6):
            other = await stack.enter_async_context(
                connect_http(url, mode="legacy", handlers=other_handlers))
            other_pid = await _pid(other)
            if other_pid != first_pid:
                yield first, first_pid, other, other_pid
                return
        raise AssertionError("every session landed on one worker")


async def _running_here(client: Client) -> int:
    return int(_text(await client.call_tool("running_tasks", {})).split(":")[1])


def _cancel_listener() -> tuple[ClientHandlers, dict[str, trio.Event]]:
    """Handlers that set an event, per task id, on a ``notifications/tasks/status``
    saying ``cancelled``."""
    heard: dict[str, trio.Event] = {}

    def on_notification(event: object) -> None:
        if getattr(event, "method", None) == "notifications/tasks/status":
            params = getattr(event, "raw_params", None) or {}
            if params.get("status") == "cancelled":
                heard.setdefault(params["taskId"], trio.Event()).set()

    return ClientHandlers(on_notification=on_notification), heard


async def test_other_workers_read_wait_for_and_cancel_a_task(deployment: Deployment) -> None:
    a_handlers, a_heard = _cancel_listener()
    b_handlers, b_heard = _cancel_listener()
    with trio.fail_after(60):
        async with two_owners(deployment.url, a_handlers, b_handlers) as (a, a_pid, b, _b_pid):
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
            # The status change reaches the requestor that cancelled (its session on
            # b's worker) and the creator's, as a cancel on the running worker does.
            with trio.fail_after(5):
                for heard in (a_heard, b_heard):
                    await heard.setdefault(task_id, trio.Event()).wait()
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


async def test_a_task_asks_a_requestor_held_by_another_worker(deployment: Deployment) -> None:
    """The creating session leaves; the requestor comes back through a session another
    worker holds and waits for the result: the task's question reaches it there (the
    task input_required meanwhile), its answer reaches the task, and the result says
    which worker ran it."""
    asked: list[tuple[str, object]] = []

    async def elicit(params: t.ElicitRequestParams, ctx: object) -> t.ElicitResult:
        asked.append((params.message, (getattr(ctx, "meta", None) or {}).get(RELATED)))
        return t.ElicitResult(action="accept", content={"name": "carol"})

    with trio.fail_after(60):
        async with connect_http(deployment.url, mode="legacy") as a:
            a_pid = await _pid(a)
            handle = await a.call_tool_task("approve", {"delay": 1.0}, ttl=120)
            task_id = handle.task_id
        # The creating session ended (DELETE): nobody left to ask on a's worker.
        for _ in range(6):
            async with connect_http(deployment.url, mode="legacy",
                                    handlers=ClientHandlers(elicitation=elicit)) as b:
                if await _pid(b) == a_pid:
                    continue
                waiting = await b.task(task_id, tool="approve")
                result = await waiting.result()
                assert _text(result) == f"carol approved in {a_pid}"
                assert asked == [(f"approve? (worker {a_pid})", {"taskId": task_id})]
                assert (await b.get_task(task_id)).status == "completed"
                return
        raise AssertionError("every session landed on the task's worker")


RELATED = "io.modelcontextprotocol/related-task"


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
