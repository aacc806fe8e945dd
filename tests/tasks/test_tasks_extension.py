"""The 2026-07-28 tasks extension (SEP-2663) against real servers: `mcpactor run` over
stdio (a subprocess) and over Streamable HTTP on 127.0.0.1.

The server side is driven on the wire, message by message (what the extension says a
server answers); the client side through mcpactor's Client and `mcpactor call --task`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientHandlers, connect_http, connect_stdio
from mcpactor.protocol import types as t
from mcpactor.protocol.headers import request_headers
from mcpactor.transports.http_client import HttpPool
from mcpactor.transports.sse import SseParser

HERE = Path(__file__).resolve().parent
TARGET = f"{HERE / 'task_server.py'}:server"
STDIO = [sys.executable, "-m", "mcpactor", "run", TARGET]
MODERN = "2026-07-28"
EXT = {"extensions": {t.TASKS_EXTENSION: {}}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}
TERMINAL = ("completed", "failed", "cancelled")


def _meta(caps: dict[str, Any]) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "0"}}


class Wire:
    """A 2026-07-28 client written out by hand: each request carries its ``_meta``
    (``caps``: the client capabilities it declares, the extension by default)."""

    def __init__(self) -> None:
        self._next = 0
        #: Notifications seen so far (stdio: every one on the pipe).
        self.notes: list[dict[str, Any]] = []

    def body(self, method: str, params: dict[str, Any], caps: dict[str, Any] | None,
             rid: int | None = None) -> dict[str, Any]:
        if rid is None:
            self._next += 1
            rid = self._next
        return {"jsonrpc": "2.0", "id": rid, "method": method,
                "params": {**params, "_meta": _meta(EXT if caps is None else caps)}}

    async def call(self, method: str, params: dict[str, Any],
                   caps: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response message to one request."""
        raise NotImplementedError

    async def result(self, method: str, params: dict[str, Any],
                     caps: dict[str, Any] | None = None) -> dict[str, Any]:
        msg = await self.call(method, params, caps)
        assert "result" in msg, msg
        return dict(msg["result"])

    async def error(self, method: str, params: dict[str, Any],
                    caps: dict[str, Any] | None = None) -> dict[str, Any]:
        msg = await self.call(method, params, caps)
        assert "error" in msg, msg
        return dict(msg["error"])

    async def until(self, task_id: str, done: Callable[[dict[str, Any]], bool],
                    ) -> dict[str, Any]:
        """Poll tasks/get until ``done`` says so."""
        with trio.fail_after(20):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if done(task):
                    return task
                await trio.sleep(0.02)


class StdioWire(Wire):
    def __init__(self, proc: trio.Process) -> None:
        super().__init__()
        self.proc = proc
        self._buffer = b""

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send_all(orjson.dumps(msg) + b"\n")

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.proc.stdout.receive_some(65536)
            assert chunk, "the server closed its stdout"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return dict(orjson.loads(line))

    async def answer_to(self, rid: int) -> dict[str, Any]:
        with trio.fail_after(20):
            while True:
                msg = await self.read()
                if msg.get("id") == rid and "method" not in msg:
                    return msg
                self.notes.append(msg)

    async def call(self, method: str, params: dict[str, Any],
                   caps: dict[str, Any] | None = None) -> dict[str, Any]:
        body = self.body(method, params, caps)
        await self.send(body)
        return await self.answer_to(body["id"])


class HttpWire(Wire):
    def __init__(self, url: str, pool: HttpPool) -> None:
        super().__init__()
        self.url = url
        self.pool = pool
        #: The HTTP status of the last answer.
        self.status = 0

    async def post(self, body: dict[str, Any], headers: dict[str, str] | None = None,
                   ) -> tuple[int, dict[str, Any]]:
        """POST one message with the headers a client sends (``headers`` replaces
        them, by name); the status and the response message."""
        base = {"content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": MODERN}
        base.update({k.lower(): v for k, v in request_headers(
            body["method"], body["params"]).items()})
        for name, value in (headers or {}).items():
            base.pop(name.lower(), None)
            if value is not None:
                base[name.lower()] = value
        resp = await self.pool.request("POST", self.url, list(base.items()),
                                       orjson.dumps(body))
        data = await resp.read()
        await resp.aclose()
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            parser = SseParser()
            messages = [orjson.loads(ev.data) for ev in parser.feed(data) if ev.data.strip()]
            answer = [m for m in messages if m.get("id") == body["id"] and "method" not in m]
            self.notes.extend(m for m in messages if "method" in m)
            return resp.status, answer[0]
        return resp.status, dict(orjson.loads(data))

    async def call(self, method: str, params: dict[str, Any],
                   caps: dict[str, Any] | None = None) -> dict[str, Any]:
        self.status, msg = await self.post(self.body(method, params, caps))
        return msg


@asynccontextmanager
async def stdio_wire() -> AsyncIterator[StdioWire]:
    proc = await trio.lowlevel.open_process(
        STDIO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        yield StdioWire(proc)
    finally:
        assert proc.stdin is not None
        with trio.CancelScope(shield=True):
            await proc.stdin.aclose()
            with trio.move_on_after(10):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_wire(transport: str, http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]
              ) -> Callable[[], Any]:
    """``async with open_wire() as wire``: a hand-written client of a fresh server
    process, over the transport of the test's parameter."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Wire]:
        if transport == "stdio":
            async with stdio_wire() as wire:
                yield wire
            return
        _, url = http_server(TARGET)
        pool = HttpPool()
        try:
            yield HttpWire(url, pool)
        finally:
            await pool.aclose()

    return opened


# -- the server, on the wire ------------------------------------------------------------


async def test_discover_declares_the_extension_not_the_2025_capability(
        open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        caps = (await wire.result("server/discover", {}))["capabilities"]
        assert caps["extensions"][t.TASKS_EXTENSION] == {}
        assert "tasks" not in caps


async def test_a_task_from_creation_to_its_inlined_result(open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        created = await wire.result("tools/call", {"name": "slow",
                                                   "arguments": {"n": 3, "delay": 0.05}})
        # Flat: Result & Task, integer milliseconds, none of 2025-11-25's names.
        assert created["resultType"] == "task" and "task" not in created
        assert created["status"] == "working"
        assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
        assert isinstance(created["pollIntervalMs"], int)
        assert not {"ttl", "pollInterval", "result", "error", "inputRequests",
                    "requestState"} & set(created)
        task_id = created["taskId"]
        # Durably created: readable at once.
        now = await wire.result("tasks/get", {"taskId": task_id})
        assert now["taskId"] == task_id and now["resultType"] == "complete"
        done = await wire.until(task_id, lambda task: task["status"] in TERMINAL)
        assert done["status"] == "completed"
        assert done["result"]["content"] == [{"type": "text", "text": "counted to 3"}]
        assert "_meta" not in done["result"] and "error" not in done
        # Progress and logs are not sent for a task in the extension: nothing related
        # to the task reached the client, only its status message moved.
        assert not [n for n in wire.notes if n.get("method") in ("notifications/progress",
                                                                  "notifications/message")]


async def test_tool_errors_complete_and_protocol_errors_fail(
        open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        boom = (await wire.result("tools/call", {"name": "boom", "arguments": {}}))["taskId"]
        refuse = (await wire.result("tools/call", {"name": "refuse",
                                                   "arguments": {"code": 7}}))["taskId"]
        failed_tool = await wire.until(boom, lambda task: task["status"] in TERMINAL)
        assert failed_tool["status"] == "completed"
        assert failed_tool["result"]["isError"] is True and "kaput" in str(failed_tool)
        refused = await wire.until(refuse, lambda task: task["status"] in TERMINAL)
        assert refused["status"] == "failed" and "result" not in refused
        assert refused["error"]["code"] == -32602
        assert refused["error"]["message"] == "refused with 7"
        assert refused["error"]["data"] == {"code": 7}


async def test_questions_wait_in_input_requests_and_tasks_update_answers_them(
        open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        caps = {**EXT, "elicitation": {}}
        task_id = (await wire.result("tools/call", {"name": "ask_name", "arguments": {}},
                                     caps))["taskId"]
        waiting = await wire.until(task_id, lambda task: task["status"] == "input_required")
        [(key, question)] = waiting["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Your name?"
        assert "_meta" not in question["params"]  # no related-task key in the extension
        # An answer to a key the task does not wait on is ignored (acknowledged).
        ack = await wire.result("tasks/update", {"taskId": task_id, "inputResponses": {
            "no-such-key": {"action": "accept", "content": {"name": "eve"}}}})
        assert ack["resultType"] == "complete" and not {"taskId", "status"} & set(ack)
        still = await wire.result("tasks/get", {"taskId": task_id})
        assert still["status"] == "input_required" and list(still["inputRequests"]) == [key]
        await wire.result("tasks/update", {"taskId": task_id, "inputResponses": {
            key: {"action": "accept", "content": {"name": "bob"}}}})
        done = await wire.until(task_id, lambda task: task["status"] in TERMINAL)
        assert done["result"]["content"][0]["text"] == "hello bob"
        # Answered keys are never asked again.
        assert "inputRequests" not in done


async def test_two_questions_at_once_answered_one_by_one(
        open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        caps = {**EXT, "elicitation": {}}
        task_id = (await wire.result("tools/call", {"name": "ask_two", "arguments": {}},
                                     caps))["taskId"]
        both = await wire.until(task_id, lambda task: len(task.get("inputRequests") or {}) == 2)
        first, second = both["inputRequests"]
        assert first != second
        by_message = {q["params"]["message"]: k for k, q in both["inputRequests"].items()}
        await wire.result("tasks/update", {"taskId": task_id, "inputResponses": {
            by_message["first?"]: {"action": "accept", "content": {"first": "one"}}}})
        partly = await wire.result("tasks/get", {"taskId": task_id})
        assert partly["status"] == "input_required"
        assert list(partly["inputRequests"]) == [by_message["second?"]]
        await wire.result("tasks/update", {"taskId": task_id, "inputResponses": {
            by_message["second?"]: {"action": "accept", "content": {"second": "two"}}}})
        done = await wire.until(task_id, lambda task: task["status"] in TERMINAL)
        assert done["result"]["content"][0]["text"] == "one and two"


async def test_cancel_is_an_idempotent_acknowledgement(open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        task_id = (await wire.result("tools/call", {"name": "hang", "arguments": {}}))["taskId"]
        ack = await wire.result("tasks/cancel", {"taskId": task_id})
        assert ack["resultType"] == "complete"
        assert not {"taskId", "status", "result", "error"} & set(ack)
        cancelled = await wire.result("tasks/get", {"taskId": task_id})
        assert cancelled["status"] == "cancelled" and "result" not in cancelled
        again = await wire.result("tasks/cancel", {"taskId": task_id})
        assert again["resultType"] == "complete"
        for method, params in (("tasks/get", {}), ("tasks/cancel", {}),
                               ("tasks/update", {"inputResponses": {}})):
            error = await wire.error(method, {"taskId": "no-such-task", **params})
            assert error["code"] == -32602, (method, error)


async def test_without_the_extension(open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        none: dict[str, Any] = {}
        # An optional tool answers as a plain call; a required one cannot.
        plain = await wire.result("tools/call", {"name": "slow", "arguments": {"n": 1}}, none)
        assert plain["resultType"] == "complete" and "taskId" not in plain
        assert plain["content"][0]["text"] == "counted to 1"
        refused = await wire.error("tools/call", {"name": "ask_name", "arguments": {}}, none)
        assert refused["code"] == -32021
        assert refused["data"]["requiredCapabilities"] == {"extensions": {t.TASKS_EXTENSION: {}}}
        for method, params in (("tasks/get", {}), ("tasks/cancel", {}),
                               ("tasks/update", {"inputResponses": {}})):
            error = await wire.error(method, {"taskId": "x", **params}, none)
            assert error["code"] == -32021, (method, error)
        # 2025-11-25's `task` param means nothing in this revision.
        hinted = await wire.result("tools/call", {"name": "plain", "arguments": {},
                                                  "task": {"ttl": 1000}})
        assert hinted["content"][0]["text"] == "plain" and "taskId" not in hinted


async def test_tasks_result_and_tasks_list_are_gone(open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        for method, params in (("tasks/result", {"taskId": "x"}), ("tasks/list", {})):
            error = await wire.error(method, params)
            assert error["code"] == -32601, (method, error)
            if isinstance(wire, HttpWire):
                assert wire.status == 404


async def test_input_rounds_before_the_task_then_the_task(open_wire: Callable[[], Any]) -> None:
    async with open_wire() as wire:
        caps = {**EXT, "elicitation": {}}
        call = {"name": "greet_later", "arguments": {}}
        first = await wire.result("tools/call", call, caps)
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["who"]
        created = await wire.result("tools/call", {
            **call, "requestState": first["requestState"],
            "inputResponses": {"who": {"action": "accept", "content": {"name": "ann"}}}}, caps)
        assert created["resultType"] == "task"
        assert "requestState" not in created and "inputRequests" not in created
        task_id = created["taskId"]
        # In the task, a question of its own (its keys are the task's, not the rounds').
        waiting = await wire.until(task_id, lambda task: task["status"] == "input_required")
        assert list(waiting["inputRequests"]) == ["who"]
        await wire.result("tasks/update", {"taskId": task_id, "inputResponses": {
            "who": {"action": "accept", "content": {"name": "ann again"}}}})
        done = await wire.until(task_id, lambda task: task["status"] in TERMINAL)
        assert done["result"]["content"][0]["text"] == "hello ann, then ann again"


async def test_listening_for_a_task_over_stdio() -> None:
    async with stdio_wire() as wire:
        task_id = (await wire.result("tools/call", {"name": "slow", "arguments": {
            "n": 3, "delay": 0.1}}))["taskId"]
        listen = wire.body("subscriptions/listen", {"notifications": {
            "taskIds": [task_id, "not-a-task"]}}, None, rid=100)
        await wire.send(listen)
        with trio.fail_after(20):
            ack = await wire.read()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
            seen = []
            while not seen or seen[-1]["status"] not in TERMINAL:
                note = await wire.read()
                assert note["method"] == "notifications/tasks"
                assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 100
                seen.append(note["params"])
        assert seen[0]["status"] == "working" and seen[-1]["status"] == "completed"
        assert seen[-1]["result"]["content"][0]["text"] == "counted to 3"
        await wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 100}})
        # Without the extension, asking for task notifications is -32021.
        refused = await wire.error("subscriptions/listen",
                                   {"notifications": {"taskIds": [task_id]}}, {})
        assert refused["code"] == -32021


async def test_http_checks_mcp_name_against_the_task_id(
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    _, url = http_server(TARGET)
    pool = HttpPool()
    try:
        wire = HttpWire(url, pool)
        task_id = (await wire.result("tools/call", {"name": "hang", "arguments": {}}))["taskId"]
        get = wire.body("tasks/get", {"taskId": task_id}, None)
        status, msg = await wire.post(get, {"Mcp-Name": "someone-else"})
        assert status == 400 and msg["error"]["code"] == -32020
        status, msg = await wire.post(get, {"Mcp-Name": None})
        assert status == 400 and msg["error"]["code"] == -32020
        status, msg = await wire.post(get, {"Mcp-Name": f"  {task_id} "})
        assert status == 200 and msg["result"]["taskId"] == task_id
        await wire.result("tasks/cancel", {"taskId": task_id})
    finally:
        await pool.aclose()


# -- the client ---------------------------------------------------------------------------


async def elicit_bob(params: Any) -> t.ElicitResult:
    message = getattr(params, "message", "")
    return t.ElicitResult(action="accept", content={
        "name": "bob", "first": f"re {message}", "second": f"re {message}"})


async def model_42(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="42"), model="m")


@asynccontextmanager
async def modern_client(transport: str, url: str | None) -> AsyncIterator[Any]:
    handlers = ClientHandlers(elicitation=elicit_bob, sampling=model_42)
    if transport == "stdio":
        async with connect_stdio(STDIO, handlers=handlers, mode=MODERN) as client:
            yield client
    else:
        assert url is not None
        async with connect_http(url, handlers=handlers, mode=MODERN) as client:
            yield client


@pytest.fixture
def server_url(transport: str, http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]
               ) -> str | None:
    return http_server(TARGET)[1] if transport == "http" else None


async def test_client_task_handle_in_the_extension(transport: str, server_url: str | None,
                                                   ) -> None:
    with trio.fail_after(60):
        async with modern_client(transport, server_url) as client:
            assert client.stateless
            slow = await client.call_tool_task("slow", {"n": 3, "delay": 0.1})
            assert slow.extension and slow.status == "working" and slow.task_id
            statuses = [task.status async for task in slow.statuses()]
            assert statuses[0] == "working" and statuses[-1] == "completed"
            assert (await slow.result()).content[0].text == "counted to 3"
            # Structured results are read as for a plain call.
            stats = await client.call_tool_task("stats", {"values": [1, 2, 3]})
            assert (await stats.result()).data == {"count": 3, "mean": 2.0}
            # The task's question is answered by the client's handler (tasks/update).
            asked = await client.call_tool_task("ask_name", {})
            assert (await asked.result()).content[0].text == "hello bob"
            two = await client.call_tool_task("ask_two", {})
            assert (await two.result()).content[0].text == "re first? and re second?"
            # A tool error is a completed task with an isError result.
            boom = await client.call_tool_task("boom", {})
            result = await boom.result()
            assert result.is_error and boom.status == "completed"
            # A protocol error is the task's error.
            refused = await client.call_tool_task("refuse", {"code": 3})
            with pytest.raises(RequestError) as caught:
                await refused.result()
            assert caught.value.code == -32602 and caught.value.data == {"code": 3}
            assert refused.status == "failed"
            # Cancelling: the server acknowledges; the state is read afterwards.
            hang = await client.call_tool_task("hang", {})
            assert (await hang.cancel()).status == "cancelled"
            with pytest.raises(RequestError, match="was cancelled"):
                await hang.result()
            # ... and again, on a task that ended: still an acknowledgement.
            assert (await hang.cancel()).status == "cancelled"
            # The plain requests.
            got = await client.get_task(slow.task_id)
            assert isinstance(got, t.DetailedTask) and got.result is not None
            assert await client.cancel_task(slow.task_id) is None


async def test_client_follows_a_task_a_plain_call_becomes(transport: str,
                                                          server_url: str | None) -> None:
    with trio.fail_after(60):
        async with modern_client(transport, server_url) as client:
            # ask_name runs only as a task: call_tool follows it to its result, its
            # question answered on the way, as the extension advises clients to do.
            result = await client.call_tool("ask_name", {})
            assert result.content[0].text == "hello bob"
            # greet_later: an input round first, then the task.
            later = await client.call_tool("greet_later", {})
            assert later.content[0].text == "hello bob, then bob"
            # ctx.sample inside a task: a sampling/createMessage question, answered by
            # the client's sampling handler through tasks/update.
            model = await client.call_tool("ask_model", {"prompt": "answer?"})
            assert model.content[0].text == "model said: 42"


async def test_client_attaches_to_a_task_after_reconnecting(
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    _, url = http_server(TARGET)
    with trio.fail_after(60):
        async with connect_http(url, mode=MODERN) as first:
            handle = await first.call_tool_task("slow", {"n": 5, "delay": 0.1})
        async with connect_http(url, mode=MODERN) as second:
            again = await second.task(handle.task_id, tool="slow")
            assert again.extension
            assert (await again.result()).content[0].text == "counted to 5"
            with pytest.raises(RequestError) as caught:
                await second.task("no-such-task")
            assert caught.value.code == -32602


async def test_cancelling_a_followed_call_cancels_its_task(
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    _, url = http_server(TARGET)
    with trio.fail_after(60):
        async with connect_http(url, mode=MODERN) as client:
            task_ids: list[str] = []
            real = client._task_handle

            def spy(task: Any, **kw: Any) -> Any:
                task_ids.append(task.task_id)
                return real(task, **kw)

            client._task_handle = spy  # type: ignore[method-assign]
            with trio.move_on_after(1):
                await client.call_tool("hang", {})
            client._task_handle = real  # type: ignore[method-assign]
            [task_id] = task_ids
            state = await client.get_task(task_id)
            assert state.status == "cancelled"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpactor", "call", *args],
                          capture_output=True, text=True, timeout=60)


def test_cli_call_task_in_the_extension() -> None:
    target = " ".join(STDIO)
    done = run_cli(target, "slow", '{"n": 3, "delay": 0.5}', "--task", "--mode", MODERN)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "counted to 3\n"
    lines = done.stderr.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith(": working")
    assert lines[-1].endswith(": completed")
    # The default mode speaks 2026-07-28 to this server: the same.
    auto = run_cli(target, "boom", "--task")
    assert auto.returncode == 1 and "kaput" in auto.stdout
    assert ": completed: Error executing tool boom: kaput" in auto.stderr  # not failed
    refused = run_cli(target, "refuse", '{"code": 1}', "--task")
    assert refused.returncode == 2 and "refused with 1" in refused.stderr
    assert any(line.endswith(": failed: refused with 1") for line in refused.stderr.splitlines())
    wrong = run_cli(target, "plain", "--task")
    assert wrong.returncode == 2 and "'plain' does not run as a task" in wrong.stderr
    ttl = run_cli(target, "slow", '{"n": 1}', "--task", "--ttl", "5")
    assert ttl.returncode == 2 and "--ttl applies to 2025-11-25 tasks" in ttl.stderr
    assert "Traceback" not in wrong.stderr + ttl.stderr + refused.stderr


async def test_each_revision_sees_only_its_own_tasks_capability() -> None:
    """2025-11-25's `tasks` in initialize, never the extension (SEP-2663: it is not
    defined there); the extension in server/discover, never `tasks`."""
    sys.path.insert(0, str(HERE))
    from task_server import server as task_server

    from mcpactor.testing import open_client

    async with open_client(task_server, mode="legacy") as legacy:
        caps = legacy.server_capabilities
        assert caps["tasks"]["requests"] == {"tools": {"call": {}}}
        assert t.TASKS_EXTENSION not in (caps.get("extensions") or {})
    async with open_client(task_server, mode=MODERN) as modern:
        assert modern.server_capabilities is not None  # pinned: no discover made
        found = await modern.discover()
        assert found["capabilities"]["extensions"] == {t.TASKS_EXTENSION: {}}
        assert "tasks" not in found["capabilities"]


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_client_listens_for_a_tasks_status_changes(mode: str) -> None:
    """Client.listen(task_ids=...) in either era: the extension's notifications/tasks on
    a subscriptions/listen stream, or 2025-11-25's notifications/tasks/status to the
    session attached to the task. The task's handle hears them too, without polling."""
    with trio.fail_after(30):
        async with connect_stdio(STDIO, mode=mode) as client:
            handle = await client.call_tool_task("slow", {"n": 3, "delay": 0.2})
            async with client.listen(task_ids=[handle.task_id, "no-such-task"]) as sub:
                assert sub.acknowledged == {"taskIds": [handle.task_id]}
                seen = []
                async for note in sub:
                    assert note.method == ("notifications/tasks" if mode == MODERN
                                           else "notifications/tasks/status")
                    assert note.params["taskId"] == handle.task_id
                    seen.append(note.params)
                    if note.params["status"] in TERMINAL:
                        break
            assert seen[-1]["status"] == "completed"
            if mode == MODERN:
                # The whole task as tasks/get shows it: the result inlined.
                assert seen[-1]["result"]["content"][0]["text"] == "counted to 3"
                assert handle.detailed is not None and handle.detailed.result is not None
            assert handle.status == "completed"  # heard, not polled
            assert (await handle.result()).content[0].text == "counted to 3"
