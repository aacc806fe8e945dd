"""The lean fd stream: data round trips, full pipes wait, closed streams say so."""

from __future__ import annotations

import os

import pytest
import trio

from mcpactor.transports.fdstream import FdStream


async def test_round_trip_and_end_of_input() -> None:
    r, w = os.pipe()
    reader, writer = FdStream(r), FdStream(w)
    await writer.send_all(b"hello\n")
    assert await reader.receive_some() == b"hello\n"
    await writer.aclose()
    assert await reader.receive_some() == b""
    await reader.aclose()


async def test_a_full_pipe_makes_the_writer_wait_without_losing_bytes() -> None:
    r, w = os.pipe()
    reader, writer = FdStream(r), FdStream(w)
    payload = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe buffer holds
    got = bytearray()

    async def drain() -> None:
        while len(got) < len(payload):
            got.extend(await reader.receive_some(65536))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        await writer.send_all(payload)
    assert bytes(got) == payload
    await writer.aclose()
    await reader.aclose()


async def test_many_ready_writes_still_let_other_tasks_run() -> None:
    r, w = os.pipe()
    reader, writer = FdStream(r), FdStream(w)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await trio.lowlevel.checkpoint()
        before = ticks
        for _ in range(1000):  # 1000 bytes: the pipe never fills, so no write waits
            await writer.send_all(b"x")
        assert ticks > before  # the fairness yield let the ticker in
        nursery.cancel_scope.cancel()
    await writer.aclose()
    await reader.aclose()


async def test_closed_stream_raises() -> None:
    r, w = os.pipe()
    reader, writer = FdStream(r), FdStream(w)
    await writer.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await writer.send_all(b"late")
    await reader.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await reader.receive_some()
