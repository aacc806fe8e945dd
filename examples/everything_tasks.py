"""Tools that run as tasks, for the everything server (examples/everything_server.py).

Their names and arguments are the fixtures the conformance suite's tasks scenarios
name (``greet``, ``slow_compute``, ``failing_job``, ``protocol_error_job``,
``confirm_delete``, ``multi_input``, ``test_tool_with_task``). On 2025-11-25 they are
tasks of that revision (``@server.tool(task=...)``, ``tasks/get``, ``tasks/result``...);
on 2026-07-28 the same functions are tasks of the extension (SEP-2663: ``tasks/get``,
``tasks/update``, ``tasks/cancel``) for a client that declares it.
"""

from __future__ import annotations

from typing import Any

import trio

from mcpactor import Context, Server, ToolError
from mcpactor.protocol.errors import InternalError

_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"]}


def register(server: Server) -> None:
    """Add the task tools to ``server``."""

    @server.tool()
    async def greet(name: str) -> str:
        """Say hello (never a task)."""
        return f"Hello, {name}!"

    @server.tool(task="optional")
    async def slow_compute(seconds: float, ctx: Context, label: str = "") -> str:
        """Sleep ``seconds``, reporting progress every second, then answer."""
        whole = int(seconds)
        for i in range(whole):
            await ctx.report_progress(i, whole, f"{label or 'computing'}: {i} of {whole} s")
            await trio.sleep(1)
        await trio.sleep(seconds - whole)
        return f"Computed {label or 'result'} after {seconds:g} s"

    @server.tool(task="required")
    async def failing_job() -> str:
        """Fail after about a second: a tool execution error (``isError``)."""
        await trio.sleep(1)
        raise ToolError("failing_job failed on purpose")

    @server.tool(task="optional")
    async def protocol_error_job() -> str:
        """Fail with a protocol (JSON-RPC) error rather than a tool error."""
        await trio.sleep(0.1)
        raise InternalError("protocol_error_job raised a protocol error on purpose")

    @server.tool(task="optional")
    async def confirm_delete(ctx: Context, filename: str = "", path: str = "/tmp/example.txt"
                             ) -> str:
        """Ask the user to confirm, then (pretend to) delete ``filename`` (or ``path``)."""
        path = filename or path
        answer = await ctx.elicit(f"Delete {path}?", _CONFIRM)
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return f"Deleted {path}" if confirmed else f"Kept {path}"

    @server.tool(task="optional")
    async def multi_input(ctx: Context) -> str:
        """Ask two questions at once (one input round in 2026-07-28, one after the other
        in a session); answer with both replies."""

        def question(key: str, text: str) -> tuple[str, dict[str, Any]]:
            return ("elicitation/create", {"message": text, "requestedSchema": {
                "type": "object", "properties": {key: {"type": "string"}}, "required": [key]}})

        answers = await ctx.ask({"first": question("first", "First answer?"),
                                 "second": question("second", "Second answer?")})

        def reply(key: str) -> Any:
            answer = answers[key]
            return (answer.get("content") or {}).get(key) if answer.get("action") == "accept" \
                else None

        return f"first={reply('first')}, second={reply('second')}"

    @server.tool(task="required", begins_task=True)
    async def test_tool_with_task(ctx: Context) -> str:
        """Ask the user's name, then become a task that greets them: in 2026-07-28 the
        question is an input round of the call itself, answered before the task exists."""
        answer = await ctx.elicit("What is your name?", {
            "type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"]}, key="user_name")
        name = (answer.content or {}).get("name") if answer.action == "accept" else None
        await ctx.begin_task()
        await trio.sleep(0.2)
        return f"Hello, {name or 'stranger'}! (asked before the task began)"
