"""Tasks against real servers: `mcpactor run` over stdio and over HTTP on 127.0.0.1,
driven by mcpactor's client and by `mcpactor call --task`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor.client import ClientHandlers, connect_http, connect_stdio
from mcpactor.protocol import types as t

HERE = Path(__file__).resolve().parent
TARGET = f"{HERE / 'task_server.py'}:server"
STDIO = [sys.executable, "-m", "mcpactor", "run", TARGET]


async def elicit_bob(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "bob"})


async def test_stdio_task_with_progress_and_elicitation() -> None:
    handlers = ClientHandlers(elicitation=elicit_bob)
    with trio.fail_after(30):
        async with connect_stdio(STDIO, handlers=handlers, mode="legacy") as client:
            slow = await client.call_tool_task("slow", {"n": 3, "delay": 0.05})
            seen = [task.status_message async for task in slow.statuses()]
            assert "step 3 of 3" in seen and slow.status == "completed"
            assert (await slow.result()).content[0].text == "counted to 3"  # type: ignore[union-attr]
            asked = await client.call_tool_task("ask_name", {})
            assert (await asked.result()).content[0].text == "hello bob"  # type: ignore[union-attr]
            assert (await asked.refresh()).status == "completed"


async def test_progress_of_a_task_keeps_reaching_the_caller_after_its_creation() -> None:
    """2025-11-25: the progress token of the request that created a task stays valid
    for the task's life; progress sent after the CreateTaskResult reaches the caller's
    callback (it used to be dropped with the answer)."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with trio.fail_after(30):
        async with connect_stdio(STDIO, mode="legacy") as client:
            handle = await client.call_tool_task("slow", {"n": 4, "delay": 0.1},
                                                 on_progress=on_progress)
            created = trio.current_time()
            assert (await handle.result()).content[0].text == "counted to 4"  # type: ignore[union-attr]
            await handle.wait()
            await client.session.settle()
            assert [p for p, _, _ in seen] == [1, 2, 3, 4]
            assert seen[-1] == (4, 4, "step 4 of 4")
            assert trio.current_time() - created > 0.2  # most came after the answer
            # Once the task ended, its token is forgotten.
            assert not client.session.outbound.kept_progress


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpactor", "call", *args],
                          capture_output=True, text=True, timeout=60)


def run_cli_in(mode: str, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(target, *args, "--mode", mode)


def test_cli_call_task_prints_statuses_then_the_result() -> None:
    """2025-11-25 (--mode legacy): progress reaches the status lines as it happens."""
    target = " ".join(STDIO)

    def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli_in("legacy", *args)

    done = run_cli(target, "slow", '{"n": 3, "delay": 0.2}', "--task", "--ttl", "30")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "counted to 3\n"
    lines = done.stderr.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith(": working")
    assert any(line.endswith(": working: step 2 of 3") for line in lines)
    assert lines[-1].endswith(": completed")
    failed = run_cli(target, "boom", "--task")
    assert failed.returncode == 1 and "kaput" in failed.stdout
    assert any(line.endswith(": failed: Error executing tool boom: kaput")
               for line in failed.stderr.splitlines())
    # A tool that needs elicitation, which `mcpactor call` does not offer: its task
    # fails, exit 1.
    required = run_cli(target, "ask_name", "--task")
    assert required.returncode == 1 and "elicitation" in required.stdout
    assert any(line.startswith("task ") and ": failed: " in line
               for line in required.stderr.splitlines())
    wrong = run_cli(target, "plain", "--task")
    assert wrong.returncode == 2
    assert "'plain' does not run as a task" in wrong.stderr and "without --task" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    ttl = run_cli(target, "plain", "--ttl", "5")
    assert ttl.returncode == 2 and "--ttl applies to a call with --task" in ttl.stderr


@pytest.mark.slow
async def test_http_task_outlives_the_client_that_made_it(
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    proc, url = http_server(TARGET)
    with trio.fail_after(60):
        async with connect_http(url, mode="legacy") as first:
            handle = await first.call_tool_task("slow", {"n": 8, "delay": 0.1})
            task_id = handle.task_id
            first_session = first.session.id
        # That client closed its session (DELETE); a new one collects the task.
        async with connect_http(url, mode="legacy") as second:
            assert second.session.id != first_session
            again = await second.task(task_id, tool="slow")
            statuses = [task.status async for task in again.statuses()]
            assert statuses[-1] == "completed"
            assert (await again.result()).content[0].text == "counted to 8"  # type: ignore[union-attr]
            listed = await second.list_tasks()
            assert listed.tasks == []  # lists are per session without an auth context
    assert proc.poll() is None


@pytest.mark.slow
async def test_http_elicitation_and_sampling_inside_tasks(
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    _, url = http_server(TARGET)

    async def sample(params: Any) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", content=t.TextContent(text="42"),
                                     model="m")

    handlers = ClientHandlers(elicitation=elicit_bob, sampling=sample)
    with trio.fail_after(60):
        async with connect_http(url, handlers=handlers, mode="legacy") as client:
            asked = await client.call_tool_task("ask_name", {})
            model = await client.call_tool_task("ask_model", {"prompt": "answer?"})
            # tasks/result waits; the questions come on its stream.
            assert (await asked.result()).content[0].text == "hello bob"  # type: ignore[union-attr]
            assert (await model.result()).content[0].text == "model said: 42"  # type: ignore[union-attr]
            hang = await client.call_tool_task("hang", {})
            assert (await hang.cancel()).status == "cancelled"
            assert (await client.get_task(hang.task_id)).status == "cancelled"
