"""Trace events and recorders: every message, timer, cancellation and handler run."""

from mcpactor.tracing.recorder import (
    TRACE_FORMAT,
    TRACE_FORMAT_VERSION,
    JsonlRecorder,
    MemoryRecorder,
    TraceHeader,
    encode_events,
)
from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS, REDACTED, Redactor
from mcpactor.tracing.seeds import apply_seeds, clock_kind, fresh_seeds
from mcpactor.tracing.tracer import EncodedMessage, Tracer

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "REDACTED",
    "TRACE_FORMAT",
    "TRACE_FORMAT_VERSION",
    "EncodedMessage",
    "JsonlRecorder",
    "MemoryRecorder",
    "Redactor",
    "TraceHeader",
    "Tracer",
    "apply_seeds",
    "clock_kind",
    "encode_events",
    "fresh_seeds",
]
