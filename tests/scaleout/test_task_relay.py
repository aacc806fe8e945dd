"""Task messages between workers, two workers in one process sharing a MemoryState
(the same cluster code as over Redis): a task's question waits on a session another
worker holds; that worker stops before its client answers; the task asks the next
requestor that comes (here, on the running worker) and finishes."""

from __future__ import annotations

from functools import partial

import trio

from mcpactor import ClientHandlers, Context, Server, connect_http
from mcpactor.protocol import types as t
from mcpactor.scaleout.cluster import ClusterOptions
from mcpactor.scaleout.state import MemoryState
from mcpactor.transports.http_serve import serve_http

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _server(name: str) -> Server:
    server = Server(name)

    @server.tool(task="optional")
    async def approve(ctx: Context) -> str:
        """Ask for a name; answer with it and this worker's name."""
        answer = await ctx.elicit("approve?", SCHEMA)
        return f"{(answer.content or {}).get('name')} approved on {name}"

    return server


async def test_a_question_whose_holder_stops_is_asked_again_elsewhere() -> None:
    state = MemoryState()
    options = ClusterOptions(heartbeat=0.05, worker_ttl=0.3, session_ttl=60)
    asked_on_b = trio.Event()

    async def never_answers(params: t.ElicitRequestParams) -> t.ElicitResult:
        asked_on_b.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def dave(params: t.ElicitRequestParams) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "dave"})

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b_scope = trio.CancelScope()

            async def serve_b(task_status: trio.TaskStatus[str]) -> None:
                with b_scope:
                    await serve_http(_server("b"), port=0, quiet=True, redis=state,
                                     scaleout=options, task_status=task_status)

            url_a = await nursery.start(partial(serve_http, _server("a"), port=0, quiet=True,
                                                redis=state, scaleout=options))
            url_b = await nursery.start(serve_b)
            elicits = ClientHandlers(elicitation=dave)
            async with connect_http(url_a, mode="legacy", handlers=elicits) as creator:
                handle = await creator.call_tool_task("approve", {}, ttl=60)
            task_id = handle.task_id

            waited: list[BaseException] = []

            async def wait_on_b() -> None:
                try:
                    async with connect_http(url_b, mode="legacy", handlers=ClientHandlers(
                            elicitation=never_answers)) as far:
                        await (await far.task(task_id, tool="approve")).result()
                except BaseException as exc:  # the worker under it stops
                    waited.append(exc)

            nursery.start_soon(wait_on_b)
            await asked_on_b.wait()
            b_scope.cancel()  # the worker holding the asked session stops
            async with connect_http(url_a, mode="legacy", handlers=elicits) as back:
                assert (await back.get_task(task_id)).status == "input_required"
                result = await (await back.task(task_id, tool="approve")).result()
                assert result.content[0].text == "dave approved on a"  # type: ignore[union-attr]
            nursery.cancel_scope.cancel()

