"""Every transport passes ``check_transport`` over real pipes and sockets, and the check
catches transports that break a promise."""

from __future__ import annotations

import os
import time

import pytest
import trio
import trio.testing
import trio_websocket

from mcpactor.testing import TransportCheckFailed, check_transport, memory_pair
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from mcpactor.transports.fdstream import FdStream
from mcpactor.transports.stream import StreamTransport
from mcpactor.transports.websocket import SUBPROTOCOL, WebSocketTransport

ALL_CHECKS = 9


async def test_memory_pair() -> None:
    async def make() -> tuple[Transport, Transport]:
        return memory_pair()

    assert len(await check_transport(make)) == ALL_CHECKS


async def test_stream_transport_over_a_socketpair() -> None:
    async def make() -> tuple[Transport, Transport]:
        left, right = trio.socket.socketpair()
        a, b = trio.SocketStream(left), trio.SocketStream(right)
        return StreamTransport(a, a), StreamTransport(b, b)

    assert len(await check_transport(make)) == ALL_CHECKS


async def test_stream_transport_over_os_pipes() -> None:
    # What the stdio server runs on: one pipe each way, each end an FdStream.
    async def make() -> tuple[Transport, Transport]:
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        return (StreamTransport(FdStream(w1), FdStream(r2)),
                StreamTransport(FdStream(w2), FdStream(r1)))

    assert len(await check_transport(make)) == ALL_CHECKS


async def _websocket_server(
    nursery: trio.Nursery,
) -> tuple[int, trio.MemoryReceiveChannel[WebSocketTransport]]:
    """A WebSocket listener on 127.0.0.1: its port, and the server ends it accepts."""
    accepted_send, accepted = trio.open_memory_channel[WebSocketTransport](1)

    async def handler(request: trio_websocket.WebSocketRequest) -> None:
        ws = await request.accept(subprotocol=SUBPROTOCOL)
        await accepted_send.send(WebSocketTransport(ws))
        await trio.sleep_forever()  # the connection lives as long as its handler

    server = await nursery.start(
        lambda task_status: trio_websocket.serve_websocket(
            handler, "127.0.0.1", 0, None, max_message_size=4 << 20,
            task_status=task_status))
    return server.port, accepted


async def _websocket_pair(nursery: trio.Nursery, port: int,
                          accepted: trio.MemoryReceiveChannel[WebSocketTransport],
                          ) -> tuple[WebSocketTransport, WebSocketTransport]:
    ws = await trio_websocket.connect_websocket_url(
        nursery, f"ws://127.0.0.1:{port}/mcp", subprotocols=[SUBPROTOCOL],
        max_message_size=4 << 20)
    return WebSocketTransport(ws), await accepted.receive()


async def test_websocket_transport_over_127_0_0_1() -> None:
    async with trio.open_nursery() as nursery:
        port, accepted = await _websocket_server(nursery)

        async def make() -> tuple[Transport, Transport]:
            return await _websocket_pair(nursery, port, accepted)

        assert len(await check_transport(make)) == ALL_CHECKS
        nursery.cancel_scope.cancel()


async def test_websocket_aclose_gives_up_on_a_peer_that_never_reads() -> None:
    async with trio.open_nursery() as nursery:
        port, accepted = await _websocket_server(nursery)
        client, server_end = await _websocket_pair(nursery, port, accepted)
        server_end.close_timeout = 0.5
        # The client reads nothing: its queue fills and its side of the closing
        # handshake never comes. Closing must not hang the session on it.
        for i in range(20):
            await server_end.send([(b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % i,
                                    None)])
        started = time.monotonic()
        with trio.fail_after(10):
            await server_end.aclose()
        assert time.monotonic() - started < 3
        # The client still gets what had arrived, then the end.
        got = 0
        with trio.fail_after(10):
            while True:
                try:
                    await client.receive()
                except (trio.EndOfChannel, TransportClosed):
                    break
                got += 1
        assert got >= 1
        nursery.cancel_scope.cancel()


class _Faulty(Transport):
    """A memory end with one fault switched on."""

    name = "faulty"

    def __init__(self, inner: Transport, fault: str) -> None:
        self.inner = inner
        self.fault = fault
        self.sent = 0

    async def receive(self) -> bytes | Oversize:
        return await self.inner.receive()

    async def send(self, messages: list[Outgoing]) -> None:
        if self.fault == "reversed batches":
            messages = messages[::-1]
        if self.fault == "raises" and self.sent > 0:
            raise RuntimeError("write failed")
        self.sent += 1
        await self.inner.send(messages)

    async def aclose(self) -> None:
        if self.fault == "raises":
            self.sent = 1
        await self.inner.aclose()


@pytest.mark.parametrize(("fault", "check"), [
    ("reversed batches", "batch"),
    ("raises", "order"),
])
async def test_the_check_fails_a_transport_that_breaks_a_promise(fault: str, check: str) -> None:
    async def make() -> tuple[Transport, Transport]:
        a, b = memory_pair()
        return _Faulty(a, fault), b

    with pytest.raises(TransportCheckFailed) as failed:
        await check_transport(make)
    assert failed.value.check == check


async def test_the_check_fails_a_transport_that_stalls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    class Deaf(Transport):
        name = "deaf"

        async def receive(self) -> bytes | Oversize:
            await trio.sleep_forever()
            raise AssertionError

        async def send(self, messages: list[Outgoing]) -> None:
            pass

        async def aclose(self) -> None:
            pass

    async def make() -> tuple[Transport, Transport]:
        return Deaf(), Deaf()

    with pytest.raises(TransportCheckFailed, match="order: stuck"):
        await check_transport(make)
