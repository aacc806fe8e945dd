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



async def test_a_2026_task_is_answered_through_another_worker() -> None:
    """The tasks extension: a task runs on worker a; a client of worker b sees its
    question (the shared record holds it) and answers it with tasks/update, which the
    relay takes to a; b then sees the result. Partial answers show what still waits."""
    state = MemoryState()
    options = ClusterOptions(heartbeat=0.05, worker_ttl=0.3, session_ttl=60)

    def two_questions(name: str) -> Server:
        server = _server(name)

        @server.tool(task="optional")
        async def two(ctx: Context) -> str:
            both = await ctx.ask({key: ("elicitation/create", {
                "message": f"{key}?", "requestedSchema": SCHEMA}) for key in ("x", "y")})
            return ",".join(str((both[k].get("content") or {}).get("name")) for k in "xy")

        return server

    async def erin(params: t.ElicitRequestParams) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "erin"})

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            url_a = await nursery.start(partial(serve_http, two_questions("a"), port=0,
                                                quiet=True, redis=state, scaleout=options))
            url_b = await nursery.start(partial(serve_http, two_questions("b"), port=0,
                                                quiet=True, redis=state, scaleout=options))
            async with connect_http(url_a, mode="2026-07-28") as on_a, \
                    connect_http(url_b, mode="2026-07-28",
                                 handlers=ClientHandlers(elicitation=erin)) as on_b:
                caps = {"extensions": {t.TASKS_EXTENSION: {}}, "elicitation": {}}
                meta = {"io.modelcontextprotocol/clientCapabilities": caps}
                created = await on_a.request("tools/call", {
                    "name": "two", "arguments": {}, "_meta": meta}, follow_tasks=False)
                task_id = created.task_id
                # On b, from the shared record: both questions.
                while (seen := await on_b.get_task(task_id)).status != "input_required":  # noqa: ASYNC110 - polling a server
                    await trio.sleep(0.02)
                while len(seen.input_requests or {}) < 2:
                    await trio.sleep(0.02)
                    seen = await on_b.get_task(task_id)
                assert sorted(seen.input_requests or {}) == ["x", "y"]
                # One answer through b: the relay takes it to a; the record shows y left.
                await on_b.request("tasks/update", {"taskId": task_id, "inputResponses": {
                    "x": {"action": "accept", "content": {"name": "xavier"}}}})
                while sorted((seen := await on_b.get_task(task_id)).input_requests  # noqa: ASYNC110 - polling a server
                             or {}) != ["y"]:
                    await trio.sleep(0.02)
                assert seen.status == "input_required"
                # The rest by a handle on b, whose handler answers what still waits.
                handle = await on_b.task(task_id, tool="two")
                result = await handle.result()
                assert result.content[0].text == "xavier,erin"  # type: ignore[union-attr]
            nursery.cancel_scope.cancel()
