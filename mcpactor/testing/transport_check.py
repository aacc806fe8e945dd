"""The checks every transport must pass, run against a pair of its connected ends.

A session relies on a few promises of its :class:`~mcpactor.transports.base.Transport`
and on nothing else: messages arrive whole and in order, a batch handed to ``send`` is
the same as its messages one by one, both directions work at once, everything sent
before a clean close is received before the end of input, an end is reported as
:class:`trio.EndOfChannel` (clean) or :class:`TransportClosed` (broken) and never as
another exception, ``aclose`` may be called twice, and a cancelled ``receive`` loses
nothing. :func:`check_transport` checks each promise on a fresh pair, in the spirit of
:func:`trio.testing.check_two_way_stream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

__all__ = ["TransportCheckFailed", "TransportMaker", "check_transport"]

#: Makes two connected ends: what one sends, the other receives.
TransportMaker = Callable[[], Awaitable[tuple[Transport, Transport]]]

#: Seconds any one step may take before the check calls the transport stuck.
STEP_TIMEOUT = 10.0


class TransportCheckFailed(AssertionError):
    """A transport broke one of the promises a session relies on (``check`` names it)."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


def _message(i: int, text: str = "") -> bytes:
    # Valid JSON-RPC, with what framing must survive: non-ASCII text and an escaped
    # line break inside a string.
    body = f'{{"jsonrpc":"2.0","method":"check","params":{{"i":{i},"text":"é ✓ \\n {text}"}}}}'
    return body.encode("utf-8")


async def check_transport(make: TransportMaker, *, large_message: int = 1 << 20) -> list[str]:
    """Run every check, each on a fresh pair from ``make``; the names of those run.

    ``large_message``: the size in bytes of the large message sent in one piece (keep
    it within the transport's limit). Raises :class:`TransportCheckFailed` at the
    first broken promise.
    """
    checks: list[tuple[str, Callable[[Transport, Transport], Awaitable[None]]]] = [
        ("name", _check_name),
        ("order", _check_order),
        ("batch", _check_batch),
        ("large message", lambda a, b: _check_large(a, b, large_message)),
        ("both directions at once", _check_both_directions),
        ("clean end after everything sent", _check_clean_end),
        ("aclose twice", _check_aclose_twice),
        ("send after the peer closed", _check_send_after_peer_closed),
        ("cancelled receive loses nothing", _check_cancelled_receive),
    ]
    done: list[str] = []
    for name, check in checks:
        try:
            with trio.fail_after(STEP_TIMEOUT * 4):
                a, b = await make()
                try:
                    await check(a, b)
                finally:
                    with trio.CancelScope(shield=True), trio.move_on_after(STEP_TIMEOUT):
                        for end in (a, b):
                            try:
                                await end.aclose()
                            except Exception as exc:
                                raise TransportCheckFailed(
                                    name, f"aclose raised {exc!r}") from exc
        except trio.TooSlowError:
            raise TransportCheckFailed(name, "stuck (no progress in time)") from None
        except TransportCheckFailed:
            raise
        except Exception as exc:
            raise TransportCheckFailed(name, f"raised {exc!r}") from exc
        done.append(name)
    return done


async def _receive(end: Transport, check: str) -> bytes:
    with trio.fail_after(STEP_TIMEOUT):
        try:
            got = await end.receive()
        except trio.TooSlowError:
            raise
        except (trio.EndOfChannel, TransportClosed) as exc:
            raise TransportCheckFailed(check, f"the input ended early ({exc!r})") from exc
    if isinstance(got, Oversize):
        raise TransportCheckFailed(check, f"a message came back as Oversize({got.size})")
    if not isinstance(got, bytes):
        raise TransportCheckFailed(check, f"receive returned {type(got).__name__}, not bytes")
    return got


def _expect(check: str, got: Any, expected: Any, what: str) -> None:
    if got != expected:
        shown = got if len(repr(got)) < 200 else repr(got)[:200] + "..."
        raise TransportCheckFailed(check, f"{what}: expected {expected!r}, got {shown}")


async def _check_name(a: Transport, b: Transport) -> None:
    for end in (a, b):
        if not isinstance(end.name, str) or not end.name:
            raise TransportCheckFailed("name", f"{type(end).__name__}.name is {end.name!r}")


async def _check_order(a: Transport, b: Transport) -> None:
    sent = [_message(i) for i in range(50)]
    for m in sent:
        await a.send([(m, None)])
    got = [await _receive(b, "order") for _ in sent]
    _expect("order", got, sent, "messages one by one")


async def _check_batch(a: Transport, b: Transport) -> None:
    batch: list[Outgoing] = [(_message(i), i) for i in range(10)]
    await a.send(batch)
    got = [await _receive(b, "batch") for _ in batch]
    _expect("batch", got, [m for m, _ in batch], "one send of ten messages")


async def _check_large(a: Transport, b: Transport, size: int) -> None:
    filler = "x" * max(0, size - 100)
    big = _message(0, filler)
    box: list[bytes] = []
    # Sent and received at once: a stream's send of more than its buffers hold only
    # returns once the other end has read some.
    async with trio.open_nursery() as nursery:
        async def reader() -> None:
            box.append(await _receive(b, "large message"))

        nursery.start_soon(reader)
        await a.send([(big, None)])
    got = box[0]
    _expect("large message", len(got), len(big), "length")
    _expect("large message", got == big, True, "content intact")


async def _check_both_directions(a: Transport, b: Transport) -> None:
    # Both ends send a lot while the other is also sending: a transport whose sends
    # wait for the peer to read, while the peer waits to send, deadlocks here.
    count = 500
    received: dict[str, list[bytes]] = {"a": [], "b": []}

    async def pump(src: Transport, dst: Transport, key: str, offset: int) -> None:
        async with trio.open_nursery() as nursery:
            async def reader() -> None:
                for _ in range(count):
                    received[key].append(await _receive(dst, "both directions at once"))

            nursery.start_soon(reader)
            for i in range(count):
                await src.send([(_message(offset + i), None)])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, a, b, "b", 0)
        nursery.start_soon(pump, b, a, "a", 10_000)
    _expect("both directions at once", received["b"], [_message(i) for i in range(count)],
            "a to b")
    _expect("both directions at once", received["a"],
            [_message(10_000 + i) for i in range(count)], "b to a")


async def _check_clean_end(a: Transport, b: Transport) -> None:
    sent = [_message(i) for i in range(20)]
    await a.send([(m, None) for m in sent])
    got: list[bytes] = []
    # The close runs beside the reader: closing may wait for the peer (a WebSocket's
    # closing handshake), which answers only once it has read what came before.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.aclose)
        for _ in sent:
            got.append(await _receive(b, "clean end after everything sent"))
    _expect("clean end after everything sent", got, sent, "messages sent before aclose")
    with trio.fail_after(STEP_TIMEOUT):
        try:
            extra = await b.receive()
        except (trio.EndOfChannel, TransportClosed):
            return
    raise TransportCheckFailed("clean end after everything sent",
                               f"after the peer closed, receive returned {extra!r}")


async def _check_aclose_twice(a: Transport, b: Transport) -> None:
    for end in (a, b):
        await end.aclose()
        await end.aclose()
    # Its own receive after aclose reports an end, not a crash.
    for end in (a, b):
        with trio.fail_after(STEP_TIMEOUT):
            try:
                got = await end.receive()
            except (trio.EndOfChannel, TransportClosed, trio.ClosedResourceError):
                continue
        raise TransportCheckFailed("aclose twice", f"receive after aclose returned {got!r}")


async def _check_send_after_peer_closed(a: Transport, b: Transport) -> None:
    await b.aclose()
    # A send may be buffered for a while before the transport notices the peer is gone;
    # what it must never do is raise anything but TransportClosed, or hang.
    with trio.fail_after(STEP_TIMEOUT):
        for i in range(200):
            try:
                await a.send([(_message(i, "y" * 1000), None)])
            except TransportClosed:
                return


async def _check_cancelled_receive(a: Transport, b: Transport) -> None:
    with trio.move_on_after(0.05):
        await b.receive()
        raise TransportCheckFailed("cancelled receive loses nothing",
                                   "receive returned with nothing sent")
    first = _message(1)
    await a.send([(first, None)])
    _expect("cancelled receive loses nothing", await _receive(b, "cancelled receive"), first,
            "the next message after a cancelled receive")
