"""Encoding and writing trace lines on a background thread; choosing the writer.

The session's tasks only append events to a list; every batch is handed to a writer.
:class:`BackgroundWriter` is a thread of this process that redacts, encodes with orjson
and writes, so file I/O never runs on the Trio thread (a slow disk cannot stall message
handling) — but its CPU is the server's, under the same GIL. The trace sink process
(:mod:`.sinkclient`) takes that work out of the process.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import IO, Any, Protocol

from mcpactor.tracing.encode import Compact, Record

_STOP = object()

#: Encodes a batch of events as lines, each ending in a newline.
Encoder = Callable[[list[Record]], bytes]

#: The writers a JsonlRecorder can use.
WRITER_MODES = ("thread", "process")
#: Used when neither the ``writer`` argument nor the environment names one: the sink
#: process. A writer thread shares the GIL with the Trio thread: every batch it encodes
#: stalls the session for as long, plus a GIL hand-over (an OS wake-up) each way; the
#: sink leaves this process one ``orjson.dumps`` and one pipe write per batch and does
#: the rest at idle priority. Where no sink can run, recorders use a thread.
DEFAULT_WRITER = "process"
#: The environment variable that chooses the writer of every recorder of a process.
WRITER_ENV = "MCPACTOR_TRACE_WRITER"


def writer_mode(requested: str | None) -> str:
    """The writer to use: ``requested``, else ``$MCPACTOR_TRACE_WRITER``, else the default.

    A bad argument is an error; a bad environment value falls back to the default (a
    typo in the environment must not stop a server from starting).
    """
    if requested is not None:
        if requested not in WRITER_MODES:
            raise ValueError(f"trace writer must be one of {WRITER_MODES}, not {requested!r}")
        return requested
    env = os.environ.get(WRITER_ENV, "").strip().lower()
    return env if env in WRITER_MODES else DEFAULT_WRITER


class TraceWriter(Protocol):
    """Where a JsonlRecorder hands its batches."""

    error: BaseException | None

    def submit(self, prefix: list[bytes], events: list[Record]) -> None:
        """Queue already-encoded lines (the header), the events staged so far and
        ``events``, to be written in that order."""
        ...

    def stage(self, events: list[Compact], first_seq: int, origin: int) -> bool:
        """Take ``events`` (numbered from ``first_seq``, clock readings from ``origin``:
        see :func:`~mcpactor.tracing.encode.to_records`) ahead of the batch they belong
        to (the recorder then lets go of them), or return False to leave them with the
        recorder. The events must be read before returning: the list is reused."""
        ...

    def close(self) -> None:
        """Return once everything submitted is in the file and the file is closed."""
        ...


class BackgroundWriter:
    """A daemon thread writing encoded batches of events to a binary file."""

    def __init__(self, file: IO[bytes], encode: Encoder) -> None:
        self._file = file
        self._encode = encode
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mcpactor-trace-writer", daemon=True)
        self._thread.start()

    def submit(self, prefix: list[bytes], events: list[Record]) -> None:
        """Queue already-encoded lines (the header) and events to encode."""
        self._queue.put((prefix, events))

    def stage(self, events: list[Compact], first_seq: int, origin: int) -> bool:
        """Never: the thread encodes whole batches, off the Trio thread."""
        return False

    def close(self) -> None:
        """Write everything queued, then close the file (blocks until done)."""
        self._queue.put(_STOP)
        self._thread.join()
        self._file.close()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            prefix, events = item
            try:
                block = self._encode(events)
                if prefix:
                    block = b"\n".join(prefix) + b"\n" + block
                if block:
                    self._file.write(block)
                    self._file.flush()
            except Exception as exc:  # a recorder must never take the session down
                self.error = exc
