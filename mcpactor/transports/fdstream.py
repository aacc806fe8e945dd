"""A lean Trio stream over a non-blocking file descriptor (the stdio server's pipes).

``trio.lowlevel.FdStream`` also yields to the scheduler before every write, even when
the pipe has room; on the stdio hot path that is an extra scheduler pass per response
(a handler writing its answer in place). This stream's writes only yield when the pipe
is full, and at least once every :data:`_FAIRNESS` consecutive writes, so a session that
writes a lot cannot starve the others. Reads yield first, as trio's do (see there).
"""

from __future__ import annotations

import errno
import os

import trio

_FAIRNESS = 64


class FdStream(trio.abc.Stream):
    """Send and receive on one file descriptor that this stream owns and closes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        self._closed = False
        self._ready_streak = 0

    async def _maybe_yield(self) -> None:
        self._ready_streak += 1
        if self._ready_streak >= _FAIRNESS:
            self._ready_streak = 0
            await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Read what is there (waiting only if nothing is); b"" at end of input."""
        size = max_bytes or 65536
        # Yield before reading (as trio does): the handlers spawned from the last read
        # answer first, the peer sends more, and the next read finds a larger batch.
        await trio.lowlevel.checkpoint()
        while True:
            if self._closed:
                raise trio.ClosedResourceError("the stream is closed")
            try:
                data = os.read(self.fd, size)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.fd)
                continue
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    raise trio.ClosedResourceError("the stream is closed") from None
                raise trio.BrokenResourceError(str(exc)) from exc
            return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write all of ``data``, waiting only while the pipe is full."""
        if self._closed:
            raise trio.ClosedResourceError("the stream is closed")
        with memoryview(data) as view:
            sent = 0
            total = len(view)
            while sent < total:
                try:
                    sent += os.write(self.fd, view[sent:])
                except BlockingIOError:
                    self._ready_streak = 0
                    await trio.lowlevel.wait_writable(self.fd)
                except OSError as exc:
                    if exc.errno == errno.EBADF:
                        raise trio.ClosedResourceError("the stream is closed") from None
                    raise trio.BrokenResourceError(str(exc)) from exc
        await self._maybe_yield()

    async def wait_send_all_might_not_block(self) -> None:
        """Wait until the descriptor is writable."""
        await trio.lowlevel.wait_writable(self.fd)

    async def send_eof(self) -> None:
        """Pipes have no half-close: closing is the end of output."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close the descriptor (restoring its blocking mode first)."""
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self.fd)
            try:
                os.set_blocking(self.fd, self._was_blocking)
            except OSError:
                pass
            os.close(self.fd)
        await trio.lowlevel.checkpoint()
