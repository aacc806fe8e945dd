"""The h11 client pool: keep-alive reuse, and a retry when the server dropped an idle
connection (what every keep-alive server does after its timeout)."""

from __future__ import annotations

from functools import partial

import h11
import trio

from mcpactor.transports.http_client import HttpPool

TIMEOUT = 10


async def _serve_one_request_then_close(stream: trio.SocketStream, served: list[int]) -> None:
    """Answer one request with keep-alive, then close the connection while idle."""
    conn = h11.Connection(h11.SERVER)
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
            continue
        if isinstance(ev, h11.EndOfMessage):
            break
    served.append(1)
    body = f"answer {len(served)}".encode()
    await stream.send_all(conn.send(h11.Response(
        status_code=200, headers=[("content-length", str(len(body)))]
    )))
    await stream.send_all(conn.send(h11.Data(data=body)))
    await stream.send_all(conn.send(h11.EndOfMessage()))
    await trio.sleep(0.05)
    await stream.aclose()  # the idle keep-alive connection is dropped


async def test_stale_keep_alive_connection_is_retried_once() -> None:
    served: list[int] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, partial(_serve_one_request_then_close, served=served), 0,
                        host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            url = f"http://127.0.0.1:{port}/x"
            pool = HttpPool()
            for expected in (1, 2, 3):
                resp = await pool.request("POST", url, [("content-type", "text/plain")], b"hi")
                assert resp.status == 200
                assert await resp.read() == f"answer {expected}".encode()
                await resp.aclose()
                await trio.sleep(0.2)  # let the server drop the idle connection
            # Every request after the first found its pooled connection dead and retried.
            assert pool.opened == 3
            assert len(served) == 3
            await pool.aclose()
            nursery.cancel_scope.cancel()
