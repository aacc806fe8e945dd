"""Ceiling: framework-free stdio echo on trio.

``python bare_pipe_trio.py [loop | tasks]``

- ``loop`` (default): one task reads a chunk, answers every complete line in it and
  writes the answers with one ``send_all`` -- the trio cost of the I/O path alone.
- ``tasks``: one task per request plus a single writer task that drains a memory
  channel and writes everything queued in one ``send_all``; this is the shape of
  mcpactor's dispatcher/writer actors with the protocol work taken out, so it shows
  what that structure costs by itself.
"""

from __future__ import annotations

import os
import sys

import trio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bare import answer_line


async def _loop(stdin: trio.lowlevel.FdStream, stdout: trio.lowlevel.FdStream) -> None:
    buf = b""
    while chunk := await stdin.receive_some(1 << 16):
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out = [r for line in lines if line and (r := answer_line(line)) is not None]
        if out:
            await stdout.send_all(b"".join(out))


async def _tasks(stdin: trio.lowlevel.FdStream, stdout: trio.lowlevel.FdStream) -> None:
    send, receive = trio.open_memory_channel[bytes](1000)

    async def handle(line: bytes) -> None:
        reply = answer_line(line)
        if reply is not None:
            await send.send(reply)

    async def writer() -> None:
        async for first in receive:
            batch = [first]
            # Everything already queued goes out in the same write.
            while True:
                try:
                    batch.append(receive.receive_nowait())
                except trio.WouldBlock:
                    break
            await stdout.send_all(b"".join(batch))

    async with trio.open_nursery() as outer:
        outer.start_soon(writer)
        # Closing the channel after the last handler lets the writer flush and finish.
        async with send, trio.open_nursery() as handlers:
            buf = b""
            while chunk := await stdin.receive_some(1 << 16):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line:
                        handlers.start_soon(handle, line)


async def main(mode: str) -> None:
    """Serve stdin/stdout until stdin closes."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout:
        await (_tasks if mode == "tasks" else _loop)(stdin, stdout)


if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "loop")
