"""2025-11-25 tasks across implementations, both ways:

* the official TypeScript SDK's client (its experimental tasks API: ``callToolStream``,
  ``cancelTask``, ``listTasks``) runs mcpactor's task tools over stdio;
* mcpactor's client runs the npm reference server's task tool
  (``simulate-research-query``: statuses, ``input_required`` answered through
  ``tasks/result``), and is the receiver of the tasks that server asks it to run
  (``trigger-*-request-async``: sampling and elicitation as client-side tasks, which
  the server polls with ``tasks/get`` and fetches with ``tasks/result``).

The official Python SDK (``mcp`` 2.3.0) has no 2025-11-25 tasks, so it is not here;
tests/interop/test_sdk_* check that it still reads our tool lists.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

import pytest
import trio
from interop_support import HERE, ROOT, SERVER_EVERYTHING_ENTRY, subprocess_env

from mcpactor.client import ClientHandlers, connect_stdio
from mcpactor.protocol import types as t

pytestmark = [pytest.mark.interop, pytest.mark.slow]

RELATED = "io.modelcontextprotocol/related-task"
TS_SDK = SERVER_EVERYTHING_ENTRY.parents[2] / "sdk"
TASK_SERVER = [sys.executable, "-m", "mcpactor", "run", "tests/tasks/task_server.py:server"]


def test_typescript_sdk_client_runs_our_task_tools(server_everything: list[str]) -> None:
    node = shutil.which("node")
    assert node is not None
    env = subprocess_env()
    env["MCP_TS_SDK"] = str(TS_SDK)
    proc = subprocess.run([node, str(HERE / "ts_task_client.mjs"), *TASK_SERVER], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    assert out["capabilities"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert out["taskSupport"]["slow"] == "optional" and out["taskSupport"]["plain"] is None
    slow = out["slow"]
    assert slow["seen"][0] == ["created", "working"]
    assert slow["seen"][-1] == ["result", "counted to 2", {RELATED: {"taskId": slow["taskId"]}}]
    ask = out["askName"]
    # A required tool: the SDK made the call a task by itself; the tool's elicitation
    # reached it with the related-task _meta (whether its poll caught input_required
    # first depends on timing), and the result came back.
    assert ask["seen"][0] == ["created", "working"]
    assert ask["seen"][-1][:2] == ["result", "hello ts"] and out["asked"] == [ask["taskId"]]
    assert out["boom"]["seen"][-2] == ["status", "failed"]
    assert out["cancel"]["status"] == "cancelled" and out["afterCancel"] == "cancelled"
    assert out["list"] == ["completed", "completed", "failed", "cancelled"]
    assert out["unknown"] == -32602


async def choose_first(params: Any) -> t.ElicitResult:
    """Pick the first interpretation server-everything offers."""
    prop = params.requested_schema["properties"]["interpretation"]
    return t.ElicitResult(action="accept", content={"interpretation": prop["oneOf"][0]["const"]})


async def test_our_client_runs_the_reference_servers_task_tool(
        server_everything: list[str]) -> None:
    with trio.fail_after(60):
        async with connect_stdio(server_everything,
                                 handlers=ClientHandlers(elicitation=choose_first)) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            execution = tools["simulate-research-query"].execution
            assert execution is not None and execution.task_support == "required"
            handle = await client.call_tool_task(
                "simulate-research-query", {"topic": "python", "ambiguous": True}, ttl=120)
            results: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def fetch() -> None:
                    results.append(await handle.result())

                nursery.start_soon(fetch)
                seen = [(task.status, task.status_message) async for task in handle.statuses()]
            statuses = [status for status, _ in seen]
            assert "input_required" in statuses and statuses[-1] == "completed"
            assert ("working", "Analyzing content...") in seen
            text = results[0].content[0].text
            assert text.startswith("# Research Report: python (programming)")
            assert results[0].meta == {RELATED: {"taskId": handle.task_id}}
            listed = await client.list_tasks()
            assert handle.task_id in [task.task_id for task in listed.tasks]


async def test_the_reference_server_runs_tasks_on_our_client(
        server_everything: list[str]) -> None:
    sampled: list[Any] = []

    async def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        assert params.task is not None  # it came as a task: we answered CreateTaskResult
        sampled.append(params)
        await trio.sleep(1.2)  # long enough for the server to see `working` first
        return t.CreateMessageResult(role="assistant", content=t.TextContent(
            text="sampled by mcpactor"), model="mcpactor-test")

    async def elicit(params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Ada", "agreeToTerms": True})

    handlers = ClientHandlers(sampling=sample, elicitation=elicit, tasks=True)
    with trio.fail_after(60):
        async with connect_stdio(server_everything, handlers=handlers) as client:
            tools = {tool.name for tool in await client.list_all_tools()}
            # The server offers these only to a client declaring tasks.requests.*.
            assert {"trigger-sampling-request-async",
                    "trigger-elicitation-request-async"} <= tools
            result = await client.call_tool("trigger-sampling-request-async",
                                            {"prompt": "hello"})
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("[COMPLETED] Async sampling completed!"), text
            assert "Poll 1: working" in text and '"text": "sampled by mcpactor"' in text
            assert f'"{RELATED}"' in text and len(sampled) == 1
            result = await client.call_tool("trigger-elicitation-request-async", {})
            texts = [block.text for block in result.content]  # type: ignore[union-attr]
            assert texts[0] == "[COMPLETED] User provided the requested information!", texts
            assert "- Name: Ada" in texts[1] and "- Agreed to terms: true" in texts[1]
            # Both were tasks of this client: its own list shows them, completed.
            listed = await client.session.handler.task_runtime.store.list(  # type: ignore[attr-defined]
                owner=None, session=client.session.id, cursor=None, limit=10)
            assert [r.status for r in listed[0]] == ["completed", "completed"]
