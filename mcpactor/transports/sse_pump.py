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

__all__ = ["PRIMING_GRACE", "PumpOptions", "pump_stream"]

#: Seconds the priming event may wait for the stream's first event, to share its write.
PRIMING_GRACE = 0.005


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
    stream completes, another response takes it over, or the client leaves.

    Writes are coalesced: the priming event goes out with the first events when they
    are already there, and the last events with the end of the body.
    """
    hs.active_requests += 1
    try:
        if not opts.started:
            await asgi.start_sse(send, headers)
        prefix = b""
        if opts.priming_retry_ms is not None:
            prefix = encode_event(b"", id=stream.event_id(after), retry=opts.priming_retry_ms)
        ended = False
        if prefix and not stream.done and stream.generation == generation \
                and not stream.after(after):
            # A handler usually answers within a scheduler pass or two: waiting that
            # long lets the priming event, the answer and the end of the body go out
            # as one write, with no disconnect watcher. Still first, still at once.
            with trio.move_on_after(PRIMING_GRACE):
                await stream.wait_changed()
        if stream.done:
            # Everything is already here: nothing to wait for, so no disconnect watcher.
            ended = await _pump_events(stream, after, generation, send, opts, prefix)
            left = False
        else:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(asgi.watch_disconnect, receive, scope)
                    ended = await _pump_events(stream, after, generation, send, opts, prefix)
                    nursery.cancel_scope.cancel()
            left = scope.cancelled_caught
        if not ended and not left:
            await asgi.end_body(send)
    finally:
        hs.active_requests -= 1
        hs.touch()


async def _pump_events(
    stream: Stream, after: int, generation: int, send: Send, opts: PumpOptions, prefix: bytes
) -> bool:
    """Write events as they come; True when the last write also ended the body."""
    ping = opts.ping_interval
    while stream.generation == generation:
        batch = stream.after(after)
        if batch:
            chunk = prefix + b"".join(
                encode_event(data, id=stream.event_id(seq) if opts.with_ids else None)
                for seq, data in batch
            )
            prefix = b""
            after = batch[-1][0]
            stream.delivered = max(stream.delivered, after)
            if stream.complete_after(after):
                await asgi.end_body(send, chunk)
                return True
            await asgi.sse_chunk(send, chunk)
            continue
        if prefix:
            # The priming event goes out at once, events or not (the client needs an
            # id to resume from if the connection drops before the first event).
            await asgi.sse_chunk(send, prefix)
            prefix = b""
            continue
        if stream.complete_after(after):
            return False
        with trio.move_on_after(ping if ping is not None else math.inf) as timer:
            await stream.wait_changed()
        if timer.cancelled_caught:
            # Keep-alive: also how a vanished client is noticed on an idle stream.
            await asgi.sse_chunk(send, encode_comment("ping"))
    if prefix:
        await asgi.sse_chunk(send, prefix)
    return False
