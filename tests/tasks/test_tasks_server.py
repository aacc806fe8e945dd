"""2025-11-25 tasks on the server, through mcpactor's own client over an in-memory pair:
the lifecycle, the taskSupport rules, progress/logs/elicitation/sampling inside a task,
failures, cancellation, TTLs, limits, listing, and tasks outliving their session."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import Server
from mcpactor.client import ClientHandlers
from mcpactor.protocol import types as t
from mcpactor.protocol.errors import CapabilityNotSupported, RequestError
from mcpactor.session.state import SessionAuth
from mcpactor.tasks import InMemoryTaskStore, TaskOptions
from mcpactor.testing.client import open_client
from mcpactor.tracing.recorder import MemoryRecorder

RELATED = "io.modelcontextprotocol/related-task"
HERE = Path(__file__).resolve().parent


@pytest.fixture
def mod() -> Iterator[Any]:
    """A fresh copy of the task server module (its own runtime and store)."""
    spec = importlib.util.spec_from_file_location("task_server_fresh", HERE / "task_server.py")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    yield fresh


def sent(rec: MemoryRecorder) -> list[dict[str, Any]]:
    """Every message the server wrote."""
    return [e["msg"] for e in rec.events() if e["kind"] == "message_out"]


async def elicit_bob(params: Any, ctx: Any) -> t.ElicitResult:
    assert ctx.meta is not None and RELATED in ctx.meta
    return t.ElicitResult(action="accept", content={"name": "bob"})


async def sample_hi(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="hi"), model="m")


async def test_capability_and_tool_execution(mod: Any) -> None:
    async with open_client(mod.server) as client:
        assert client.server_capabilities["tasks"] == {
            "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        assert tools["slow"].execution == t.ToolExecution(task_support="optional")
        assert tools["ask_name"].execution == t.ToolExecution(task_support="required")
        assert tools["plain"].execution is None
    # A server without task tools declares no tasks capability.
    bare = Server("bare")

    @bare.tool
    async def echo(x: str) -> str:
        return x

    async with open_client(bare) as client:
        assert "tasks" not in client.server_capabilities
        with pytest.raises(CapabilityNotSupported):
            await client.call_tool_task("echo", {"x": "a"})
        # A task field sent anyway is ignored: the call is answered as a plain one.
        plain = await client.request("tools/call", {"name": "echo", "arguments": {"x": "a"},
                                                    "task": {"ttl": 1000}})
        assert plain.content[0].text == "a"


async def test_lifecycle_statuses_progress_logs_and_result(mod: Any) -> None:
    rec = MemoryRecorder()
    logs: list[Any] = []
    async with open_client(mod.server, server_tracer=rec,
                           handlers=ClientHandlers(on_log=logs.append)) as client:
        handle = await client.call_tool_task("slow", {"n": 3, "delay": 0.05}, ttl=60,
                                             meta={"progressToken": "p1"})
        assert handle.status == "working" and handle.task.ttl == 60000
        seen = [(task.status, task.status_message) async for task in handle.statuses()]
        assert seen[0][0] == "working" and seen[-1] == ("completed", None)
        assert ("working", "step 2 of 3") in seen
        result = await handle.result()
        assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert result.meta == {RELATED: {"taskId": handle.task_id}}
        got = await client.get_task(handle.task_id)
        assert got.status == "completed" and got.created_at.endswith("Z")
        listed = await client.list_tasks()
        assert [task.task_id for task in listed.tasks] == [handle.task_id]
    assert [log.data for log in logs] == ["step 1", "step 2", "step 3"]
    assert all(log.meta == {RELATED: {"taskId": handle.task_id}} for log in logs)
    out = sent(rec)
    created = next(m for m in out if "result" in m and "task" in m["result"])
    progress = [m["params"] for m in out if m.get("method") == "notifications/progress"]
    # The creating request's token stays valid after the CreateTaskResult went out.
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert all(p["progressToken"] == "p1" and p["_meta"][RELATED]["taskId"] == handle.task_id
               for p in progress)
    assert out.index(created) < out.index(next(m for m in out if m.get("params") in progress))
    statuses = [m["params"] for m in out if m.get("method") == "notifications/tasks/status"]
    assert statuses[-1]["status"] == "completed" and RELATED not in statuses[-1].get("_meta", {})
    kinds = [(e["kind"], e.get("outcome") or e.get("status")) for e in rec.events()
             if e.get("actor") == f"task:{handle.task_id}"]
    assert kinds[0] == ("task_created", None) and kinds[-1] == ("task_finished", "completed")


async def test_structured_result_read_as_a_type(mod: Any) -> None:
    async with open_client(mod.server) as client:
        await client.list_tools()  # the outputSchema is checked, as for call_tool
        handle = await client.call_tool_task("stats", {"values": [1, 2, 3]},
                                             result_type=mod.Stats)
        result = await handle.result()
        assert result.data == {"count": 3, "mean": 2.0}


async def test_task_support_rules(mod: Any) -> None:
    async with open_client(mod.server) as client:
        with pytest.raises(RequestError) as required:
            await client.call_tool("ask_name", {})
        assert required.value.code == -32601 and "must be called as a task" in required.value.message
        with pytest.raises(RequestError) as forbidden:
            await client.call_tool_task("plain", {})
        assert forbidden.value.code == -32601 and "does not run as a task" in forbidden.value.message
        # optional: both ways.
        assert (await client.call_tool("slow", {"n": 1, "delay": 0})).content[0].text == (  # type: ignore[union-attr]
            "counted to 1")


async def test_older_revision_has_no_tasks(mod: Any) -> None:
    async with open_client(mod.server, protocol_version="2025-06-18",
                           handlers=ClientHandlers(elicitation=elicit_bob)) as client:
        assert "tasks" not in client.server_capabilities
        with pytest.raises(CapabilityNotSupported):  # not even sent: 2025-06-18 has none
            await client.request("tasks/list", {})
        # A required task tool answers as a plain call there (no tasks in 2025-06-18).
        result = await client.call_tool("slow", {"n": 1, "delay": 0})
        assert result.content[0].text == "counted to 1"  # type: ignore[union-attr]


async def test_elicitation_and_sampling_inside_a_task(mod: Any) -> None:
    rec = MemoryRecorder()
    handlers = ClientHandlers(elicitation=elicit_bob, sampling=sample_hi)
    async with open_client(mod.server, server_tracer=rec, handlers=handlers) as client:
        handle = await client.call_tool_task("ask_name", {})
        statuses = [task.status async for task in handle.statuses()]
        assert "input_required" in statuses and statuses[-1] == "completed"
        assert (await handle.result()).content[0].text == "hello bob"  # type: ignore[union-attr]
        model = await client.call_tool_task("ask_model", {"prompt": "hello?"})
        assert (await model.result()).content[0].text == "model said: hi"  # type: ignore[union-attr]
    asks = [m for m in sent(rec) if m.get("method") in ("elicitation/create",
                                                         "sampling/createMessage")]
    assert [a["params"]["_meta"][RELATED]["taskId"] for a in asks] == [handle.task_id,
                                                                       model.task_id]


async def test_failures(mod: Any) -> None:
    async with open_client(mod.server) as client:
        boom = await client.call_tool_task("boom", {})
        final = await boom.wait()
        assert final.status == "failed" and "kaput" in (final.status_message or "")
        result = await boom.result()  # the isError result, as the call would have had
        assert result.is_error and "kaput" in result.content[0].text  # type: ignore[union-attr]
        refused = await client.call_tool_task("refuse", {"code": 7})
        assert (await refused.wait()).status == "failed"
        with pytest.raises(RequestError) as err:
            await refused.result()  # the very JSON-RPC error of the tool call
        assert err.value.code == -32602 and err.value.data == {"code": 7}
        with pytest.raises(RequestError) as unknown:
            await client.get_task("no-such-task")
        assert unknown.value.code == -32602 and "not found" in unknown.value.message


async def test_cancel(mod: Any) -> None:
    async with open_client(mod.server) as client:
        handle = await client.call_tool_task("hang", {})
        with trio.fail_after(5):
            await mod.HANG_STARTED.wait()
        cancelled = await handle.cancel()
        assert cancelled.status == "cancelled" and handle.terminal
        with trio.fail_after(5):
            await mod.HANG_ENDED.wait()
        assert mod.SEEN["hang_cancelled"] is True  # cooperative: the tool saw it
        with pytest.raises(RequestError) as again:
            await handle.cancel()
        assert again.value.code == -32602 and "terminal status 'cancelled'" in again.value.message
        with pytest.raises(RequestError) as result:
            await handle.result()
        assert result.value.code == -32603 and "cancelled" in result.value.message
        assert (await client.get_task(handle.task_id)).status == "cancelled"
        done = await client.call_tool_task("slow", {"n": 1, "delay": 0})
        await done.wait()
        with pytest.raises(RequestError) as late:
            await done.cancel()
        assert late.value.code == -32602 and "'completed'" in late.value.message


async def test_ttl_granted_and_expired(mod: Any) -> None:
    now = [1_000_000.0]
    mod.server.task_runtime = type(mod.server.task_runtime)(TaskOptions(
        default_ttl=10, max_ttl=60, store=InMemoryTaskStore(clock=lambda: now[0])))
    async with open_client(mod.server) as client:
        default = await client.call_tool_task("slow", {"n": 1, "delay": 0})
        capped = await client.call_tool_task("slow", {"n": 1, "delay": 0}, ttl=3600)
        assert default.task.ttl == 10_000 and capped.task.ttl == 60_000
        await default.wait()
        assert (await default.result()).content[0].text == "counted to 1"  # type: ignore[union-attr]
        now[0] += 11  # past the default TTL: the result is gone, the capped one kept
        with pytest.raises(RequestError) as gone:
            await client.get_task(default.task_id)
        assert gone.value.code == -32602
        assert (await client.get_task(capped.task_id)).status == "completed"
        assert [x.task_id for x in (await client.list_tasks()).tasks] == [capped.task_id]


async def test_a_running_task_past_its_ttl_is_stopped(mod: Any) -> None:
    # The store never expires it (fixed clock): the worker's deadline is what stops it.
    mod.server.task_runtime = type(mod.server.task_runtime)(TaskOptions(
        default_ttl=0.2, store=InMemoryTaskStore(clock=lambda: 1_000_000.0)))
    async with open_client(mod.server) as client:
        handle = await client.call_tool_task("hang", {})
        with trio.fail_after(5):
            final = await handle.wait()
        assert final.status == "failed" and "TTL" in (final.status_message or "")
        assert mod.SEEN["hang_cancelled"] is True


async def test_running_tasks_are_bounded(mod: Any) -> None:
    mod.server.task_runtime = type(mod.server.task_runtime)(TaskOptions(
        max_running=1, max_tasks=2))
    async with open_client(mod.server) as client:
        first = await client.call_tool_task("hang", {})
        second = await client.call_tool_task("slow", {"n": 1, "delay": 0})
        with trio.fail_after(5):
            # Polling the server's view, as a requestor does.
            while (await second.refresh()).status_message != "waiting for a free task slot":  # noqa: ASYNC110
                await trio.sleep(0.01)
        with pytest.raises(RequestError) as busy:
            await client.call_tool_task("slow", {"n": 1, "delay": 0})
        assert busy.value.code == -32005 and busy.value.data["max_tasks"] == 2
        await first.cancel()
        with trio.fail_after(5):
            assert (await second.wait()).status == "completed"


async def test_list_pages_and_scope(mod: Any) -> None:
    mod.server.task_runtime = type(mod.server.task_runtime)(TaskOptions(page_size=2))
    async with open_client(mod.server) as a, open_client(mod.server) as b:
        ids = [(await a.call_tool_task("slow", {"n": 1, "delay": 0})).task_id for _ in range(3)]
        first = await a.list_tasks()
        assert [x.task_id for x in first.tasks] == ids[:2] and first.next_cursor
        second = await a.list_tasks(first.next_cursor)
        assert [x.task_id for x in second.tasks] == ids[2:] and second.next_cursor is None
        with pytest.raises(RequestError) as bad:
            await a.list_tasks("not-a-cursor")
        assert bad.value.code == -32602
        # Without an authorization context, a list shows the session's own tasks; the
        # id is the key to the task itself.
        assert (await b.list_tasks()).tasks == []
        assert (await b.get_task(ids[0])).task_id == ids[0]


async def test_a_task_outlives_its_session(mod: Any) -> None:
    async with open_client(mod.server) as first:
        handle = await first.call_tool_task("slow", {"n": 4, "delay": 0.1})
        task_id = handle.task_id
    # The client that asked is gone; the work goes on; another session collects it.
    async with open_client(mod.server) as second:
        again = await second.task(task_id, tool="slow")
        assert again.status == "working"
        with trio.fail_after(5):
            assert (await again.wait()).status == "completed"
        assert (await again.result()).content[0].text == "counted to 4"  # type: ignore[union-attr]


async def test_input_waits_for_the_requestor_to_come_back(mod: Any) -> None:
    # The session that created the task leaves before the tool asks; the question goes
    # to the session that comes for the task next.
    handlers = ClientHandlers(elicitation=elicit_bob)
    async with open_client(mod.server, handlers=handlers) as first:
        handle = await first.call_tool_task("ask_name", {"delay": 0.3})
        task_id = handle.task_id
    async with open_client(mod.server, handlers=ClientHandlers(elicitation=elicit_bob)) as second:
        again = await second.task(task_id, tool="ask_name")
        with trio.fail_after(5):
            assert (await again.result()).content[0].text == "hello bob"  # type: ignore[union-attr]


class _Token:
    """What the resource server leaves on a session: a validated access token."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.client_id = "c"


async def test_tasks_are_bound_to_the_authorization_context(mod: Any) -> None:
    def authorize(subject: str) -> None:
        # The newest session is the one just opened; tokens as the HTTP layer binds them.
        *_, session = mod.server.sessions
        session.state.setdefault(SessionAuth, SessionAuth).owner = _Token(subject)  # type: ignore[assignment]

    async with open_client(mod.server) as alice:
        authorize("alice")
        handle = await alice.call_tool_task("slow", {"n": 1, "delay": 0})
        await handle.wait()
        async with open_client(mod.server) as mallory:
            authorize("mallory")
            for call in (mallory.get_task, mallory.cancel_task):
                with pytest.raises(RequestError) as hidden:
                    await call(handle.task_id)
                assert hidden.value.code == -32602 and "not found" in hidden.value.message
            assert (await mallory.list_tasks()).tasks == []
        async with open_client(mod.server) as again:
            authorize("alice")  # the same subject on another session sees its tasks
            assert [x.task_id for x in (await again.list_tasks()).tasks] == [handle.task_id]
            assert (await again.get_task(handle.task_id)).status == "completed"


async def test_input_required_until_every_question_is_answered(mod: Any) -> None:
    release = trio.Event()
    answered: list[str] = []

    async def elicit(params: Any) -> t.ElicitResult:
        key = params.message.rstrip("?")
        if key == "second":
            await release.wait()
        answered.append(key)
        return t.ElicitResult(action="accept", content={key: key.upper()})

    async with open_client(mod.server, handlers=ClientHandlers(elicitation=elicit)) as client:
        handle = await client.call_tool_task("ask_two", {})
        with trio.fail_after(5):
            while answered != ["first"]:  # noqa: ASYNC110 - the handler's own progress
                await trio.sleep(0.01)
        # One answered, one still open: the task still needs input.
        assert (await handle.refresh()).status == "input_required"
        release.set()
        with trio.fail_after(5):
            assert (await handle.result()).content[0].text == "FIRST and SECOND"  # type: ignore[union-attr]
        assert (await handle.refresh()).status == "completed"
