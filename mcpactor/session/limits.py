"""Bounds that keep one session's memory and concurrency finite."""

from __future__ import annotations

import attrs

_count = [attrs.validators.instance_of(int)]


@attrs.frozen
class Limits:
    """Bounds that keep one session's memory and concurrency finite."""

    #: Inbound requests handled at once; past this they wait in a queue.
    max_concurrent_requests: int = attrs.field(
        default=1024, validator=[*_count, attrs.validators.ge(1)]
    )
    #: Messages queued for the writer before senders wait.
    outbound_buffer: int = 4096
    #: Notifications queued for callbacks before the reader waits.
    notification_buffer: int = 1024
    #: Seconds in-flight handlers may take to finish after a clean end of input, and
    #: then the writer to flush what is queued.
    drain_timeout: float = 2.0
    #: Inbound requests waiting for a handler slot (in arrival order); past this they
    #: are refused at once with a "server busy, retry" error (``SERVER_BUSY``, -32005,
    #: its ``data`` naming the limits), never run. The reader itself never waits for a
    #: slot: responses, cancellations and notifications are always read, so a handler
    #: waiting for its peer (elicitation, sampling) cannot deadlock the session. A
    #: queued request the peer cancels leaves the queue at once and never runs. The
    #: default matches ``max_concurrent_requests``: a peer must have over 2,048
    #: requests outstanding to be refused, and each queued request holds only its
    #: parsed message.
    max_queued_requests: int = attrs.field(
        default=1024, validator=[*_count, attrs.validators.ge(0)]
    )
