"""Bounds that keep one session's memory and concurrency finite."""

from __future__ import annotations

import attrs


@attrs.frozen
class Limits:
    """Bounds that keep one session's memory and concurrency finite."""

    #: Inbound requests handled at once; past this the reader stops reading (backpressure).
    max_concurrent_requests: int = 1024
    #: Messages queued for the writer before senders wait.
    outbound_buffer: int = 4096
    #: Notifications queued for callbacks before the reader waits.
    notification_buffer: int = 1024
    #: Seconds in-flight handlers may take to finish after a clean end of input, and
    #: then the writer to flush what is queued.
    drain_timeout: float = 2.0
