"""Newline-framed messages over any Trio byte stream (pipes, stdio, sockets)."""

from __future__ import annotations

from collections import deque

import trio

from mcpactor.protocol.framing import DEFAULT_MAX_MESSAGE, LineFramer
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

_READ_SIZE = 256 * 1024


class StreamTransport(Transport):
    """Frames messages as lines on a send stream and a receive stream."""

    name = "stream"

    def __init__(
        self,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE,
    ) -> None:
        self._out = send_stream
        self._in = receive_stream
        self._framer = LineFramer(max_message_size)
        self._ready: deque[bytes | Oversize] = deque()
        self._eof = False

    async def receive(self) -> bytes | Oversize:
        """The next line-framed message (``buffered`` when it came in an earlier read)."""
        if self._ready:
            self.buffered = True
            return self._ready.popleft()
        self.buffered = False
        while not self._ready:
            if self._eof:
                raise trio.EndOfChannel
            try:
                chunk = await self._in.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise TransportClosed(str(exc) or "input stream broke") from exc
            if not chunk:
                self._eof = True
                self._ready.extend(self._framer.eof())
            else:
                self._ready.extend(self._framer.feed(bytes(chunk)))
        return self._ready.popleft()

    async def send(self, messages: list[Outgoing]) -> None:
        """Write the messages as lines in one call."""
        if len(messages) == 1:
            data = messages[0][0] + b"\n"
        else:
            data = b"\n".join([m for m, _ in messages]) + b"\n"
        # No lock: the session's writer is the only caller (one owner of the stream).
        try:
            await self._out.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise TransportClosed(str(exc) or "output stream broke") from exc

    async def aclose(self) -> None:
        """Close both streams."""
        for s in (self._out, self._in):
            try:
                await s.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
