"""``Limits`` for requests that have no session over HTTP (robustness campaign, item 3).

A 2026-07-28 request (and a ``--stateless`` POST) runs in a session of its own that
lives as long as its POST, so a session's handler slots and queue bound nothing. They
are bounded per server process instead: every such request shares one set of slots and
one FIFO queue of the server's ``Limits``, and past the queue the request is refused
with the same -32005 and ``data`` as a session refuses with. Real HTTP servers on
127.0.0.1; concurrency is counted inside the handler, not timed.
"""

from __future__ import annotations

from typing import Any

import trio
from http_support import running_app, wait_until

import mcpactor
from mcpactor import Limits, Server

TIMEOUT = 20
LIMITS = Limits(max_concurrent_requests=2, max_queued_requests=3)
BUSY_DATA = {"reason": "busy", "retryable": True, "max_concurrent_requests": 2,
             "max_queued_requests": 3}


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.ran = 0
        self.release = trio.Event()


def make_server(gauge: Gauge) -> Server:
    server = Server("limited", "1.0", limits=LIMITS)

    @server.tool()
    async def work(name: str) -> str:
        """Hold a slot until released."""
        gauge.ran += 1
        gauge.now += 1
        gauge.most = max(gauge.most, gauge.now)
        try:
            await gauge.release.wait()
        finally:
            gauge.now -= 1
        return name

    return server


async def _six_calls(url: str, gauge: Gauge, mode: str, *, clients: int) -> list[Any]:
    """Six concurrent calls from ``clients`` clients; each outcome (text or the error)."""
    outcomes: list[Any] = []
    async with trio.open_nursery() as nursery:
        async def one(client: Any, i: int) -> None:
            try:
                got = await client.call_tool("work", {"name": f"c{i}"})
                outcomes.append(got.content[0].text)
            except mcpactor.RequestError as exc:
                outcomes.append((exc.code, exc.message, exc.data))

        async def client_run(k: int) -> None:
            async with mcpactor.connect_http(url, mode=mode) as client:
                async with trio.open_nursery() as calls:
                    for i in range(k, 6, clients):
                        calls.start_soon(one, client, i)

        for k in range(clients):
            nursery.start_soon(client_run, k)
        # Two run, three wait, one is refused: then let them all finish.
        await wait_until(lambda: gauge.now == 2 and len(outcomes) == 1)
        await trio.sleep(0.2)  # nothing more starts while the slots are held
        assert gauge.now == 2 and len(outcomes) == 1
        gauge.release.set()
    return outcomes


async def _check(mode: str, clients: int, **options: Any) -> None:
    gauge = Gauge()
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(gauge), **options) as (_, url):
            outcomes = await _six_calls(url, gauge, mode, clients=clients)
    refused = [o for o in outcomes if isinstance(o, tuple)]
    assert refused == [(-32005, "Server busy: too many requests in progress; retry later",
                        BUSY_DATA)], outcomes
    assert gauge.most == 2 and gauge.ran == 5, (gauge.most, gauge.ran)


async def test_2026_requests_over_http_share_the_servers_limits() -> None:
    await _check("2026-07-28", clients=1)


async def test_the_scope_is_the_process_not_a_client() -> None:
    """Three clients, two calls each: the same two slots and queue of three."""
    await _check("2026-07-28", clients=3)


async def test_stateless_posts_share_the_servers_limits() -> None:
    await _check("legacy", clients=1, stateless=True, json_response=True)


async def test_a_handshake_session_is_still_counted_by_itself() -> None:
    """Unchanged: a session's own slots and queue (the same figures, per session)."""
    await _check("legacy", clients=1)


async def test_a_queued_request_whose_client_leaves_never_runs() -> None:
    gauge = Gauge()
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(gauge)) as (app, url):
            async with trio.open_nursery() as nursery:
                async def call(name: str) -> None:
                    async with mcpactor.connect_http(url, mode="2026-07-28") as client:
                        await client.call_tool("work", {"name": name})

                for name in ("a", "b"):
                    nursery.start_soon(call, name)
                await wait_until(lambda: gauge.now == 2)
                with trio.CancelScope() as leaving:
                    nursery.start_soon(call, "left")  # queued...
                    await wait_until(lambda: app._request_gate is not None
                                     and len(app._request_gate.waiting) == 1)
                    leaving.cancel()
                # ...and its client gone (the connection closed): out of the queue.
                nursery.cancel_scope.cancel()
            await wait_until(lambda: app._request_gate is not None
                             and not app._request_gate.waiting)
            gauge.release.set()
            await wait_until(lambda: gauge.now == 0)
            assert app._request_gate is not None and app._request_gate.free == 2
    assert gauge.ran == 2


async def test_a_listen_stream_takes_no_slot() -> None:
    """``subscriptions/listen`` is held open for as long as the client likes: with one
    slot and no queue, a call still runs beside two listen streams."""
    gauge = Gauge()
    gauge.release.set()
    server = make_server(gauge)
    server.limits = Limits(max_concurrent_requests=1, max_queued_requests=0)
    with trio.fail_after(TIMEOUT):
        async with running_app(server) as (_, url):
            async with mcpactor.connect_http(url, mode="2026-07-28") as client:
                async with client.listen(tools=True), client.listen(resources=True):
                    got = await client.call_tool("work", {"name": "beside"})
                    assert got.content[0].text == "beside"  # type: ignore[union-attr]
