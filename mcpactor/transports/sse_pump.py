"""Writing one logical stream (:class:`.event_store.Stream`) as one SSE response."""

from __future__ import annotations

import math

import attrs
import trio

from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Send
from mcpactor.transports.event_store import Stream
from mcpactor.transports.http_session import HttpSession
from mcpactor.transports.sse import encode_comment, encode_event

__all__ = ["PumpOptions", "pump_stream"]


@attrs.frozen(kw_only=True)
class PumpOptions:
    """How a response is written: priming event, ids, keep-alive comments."""

    #: Send the 2025-11-25 priming event (an id and empty data) with this ``retry:``.
    priming_retry_ms: int | None = None
    #: Give each event its ``id:`` (the legacy transport does not).
    with_ids: bool = True
    #: The response headers were already sent by the caller.
    started: bool = False
    ping_interval: float | None = 15.0


async def pump_stream(
    hs: HttpSession, stream: Stream, after: int, generation: int,
    receive: Receive, send: Send, headers: list[tuple[bytes, bytes]], opts: PumpOptions,
) -> None:
    """Stream ``stream``'s events after seq ``after`` as one SSE response, until the
    stream completes, another response takes it over, or the client leaves."""
    hs.active_requests += 1
    try:
        if not opts.started:
            await asgi.start_sse(send, headers)
        if opts.priming_retry_ms is not None:
            await asgi.sse_chunk(
                send, encode_event(b"", id=stream.event_id(after), retry=opts.priming_retry_ms)
            )
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(asgi.watch_disconnect, receive, scope)
                await _pump_events(stream, after, generation, send, opts)
                nursery.cancel_scope.cancel()
        if not scope.cancelled_caught:
            await asgi.end_body(send)
    finally:
        hs.active_requests -= 1
        hs.touch()


async def _pump_events(
    stream: Stream, after: int, generation: int, send: Send, opts: PumpOptions
) -> None:
    ping = opts.ping_interval
    while stream.generation == generation:
        batch = stream.after(after)
        if batch:
            chunk = b"".join(
                encode_event(data, id=stream.event_id(seq) if opts.with_ids else None)
                for seq, data in batch
            )
            after = batch[-1][0]
            stream.delivered = max(stream.delivered, after)
            await asgi.sse_chunk(send, chunk)
            continue
        if stream.complete_after(after):
            return
        with trio.move_on_after(ping if ping is not None else math.inf) as timer:
            await stream.wait_changed()
        if timer.cancelled_caught:
            # Keep-alive: also how a vanished client is noticed on an idle stream.
            await asgi.sse_chunk(send, encode_comment("ping"))
