"""Encoding and writing trace lines on a background thread.

The session's tasks only append event dicts to a list; every batch is handed to this
thread, which redacts, encodes with orjson and writes. File I/O and encoding never run
on the Trio thread, so a slow disk cannot stall message handling.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import IO, Any

_STOP = object()

Encoder = Callable[[list[dict[str, Any]]], list[bytes]]


class BackgroundWriter:
    """A daemon thread writing encoded batches of events to a binary file."""

    def __init__(self, file: IO[bytes], encode: Encoder) -> None:
        self._file = file
        self._encode = encode
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="mcpactor-trace-writer", daemon=True)
        self._thread.start()
        self.error: BaseException | None = None

    def submit(self, prefix: list[bytes], events: list[dict[str, Any]]) -> None:
        """Queue already-encoded lines (the header) and events to encode."""
        self._queue.put((prefix, events))

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
                lines = prefix + self._encode(events)
                if lines:
                    self._file.write(b"\n".join(lines) + b"\n")
                    self._file.flush()
            except Exception as exc:  # a recorder must never take the session down
                self.error = exc
