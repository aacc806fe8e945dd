"""The server the scale-out tests run as several workers: each answer names its worker."""

from __future__ import annotations

import os

import trio

from mcpactor import Context, Server

server = Server("scaleout-test", capabilities=["resources", "logging"])


@server.tool()
def whoami() -> str:
    """The worker process serving this call."""
    return str(os.getpid())


@server.tool()
async def slow_count(n: int, delay: float, ctx: Context) -> str:
    """Report progress ``n`` times, ``delay`` seconds apart, logging each step; answer
    with the worker's pid."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
        await ctx.info(f"step {i}")
        await trio.sleep(delay)
    return f"counted {n} in {os.getpid()}"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Sample the client's model, then list its roots."""
    sampled = await ctx.sample(question, max_tokens=20)
    text = getattr(sampled.content, "text", "")
    roots = await ctx.list_roots()
    return f"{text}|{len(roots)}|{os.getpid()}"


@server.tool()
async def touch(uri: str) -> str:
    """Tell subscribers of ``uri`` that it changed, and everyone that the list did."""
    await server.notify_resource_updated(uri)
    await server.notify_resources_list_changed()
    return str(os.getpid())


@server.resource("memo://one")
def memo_one() -> str:
    """A resource to subscribe to."""
    return "one"


NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
               "required": ["name"]}


@server.tool()
async def confirm(question: str, ctx: Context) -> str:
    """Ask the user twice (elicitations: requests to the client in a session, input
    rounds in a 2026-07-28 request), each question naming the worker that asked it;
    answer with both names and the pid of the worker that finished."""
    first = await ctx.elicit(f"{question} 1 (worker {os.getpid()})", NAME_SCHEMA)
    second = await ctx.elicit(f"{question} 2 (worker {os.getpid()})", NAME_SCHEMA)
    names = [(a.content or {}).get("name") for a in (first, second)]
    return f"{names[0]}|{names[1]}|{os.getpid()}"


@server.tool(task="optional")
async def job(seconds: float, ctx: Context) -> str:
    """A task that works for ``seconds`` (its status message names its worker), then
    answers with the worker's pid."""
    await ctx.report_progress(0, 1, f"running in {os.getpid()}")
    await trio.sleep(seconds)
    return f"done in {os.getpid()}"


@server.tool()
def running_tasks() -> str:
    """``pid:count`` of the tasks whose work runs in this worker."""
    return f"{os.getpid()}:{server.task_runtime.running_count}"


@server.tool(task="optional")
async def approve(delay: float, ctx: Context) -> str:
    """A task that waits ``delay`` seconds, then asks the requestor for a name (the
    question names the worker asking); answers with the name and the worker's pid."""
    await trio.sleep(delay)
    answer = await ctx.elicit(f"approve? (worker {os.getpid()})", NAME_SCHEMA)
    return f"{(answer.content or {}).get('name')} approved in {os.getpid()}"


@server.tool(task="optional")
async def steps(n: int, ctx: Context) -> str:
    """Report progress and log ``n`` times; the answer names no worker (a trace of it
    replays on any machine). Runs as a task when asked."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
        await ctx.info(f"step {i}")
        await trio.sleep(0.01)
    return f"{n} steps"
