"""Recording sessions: every message, handler run, timer and cancellation, with what
decided the run (the order of task steps, clock readings, entropy).

``Recorder`` records the followed sessions of one Trio run (:mod:`.recorder`);
:mod:`.tasks`, :mod:`.schedule` and :mod:`.entropy` are what it hooks into the run;
:mod:`.sink` and :mod:`.sinkclient` write the files without the event loop waiting.

The names below load on first use: the trace sink process imports :mod:`.sink` alone,
without Trio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpactor.tracing.recorder import (
        TRACE_FORMAT,
        TRACE_FORMAT_VERSION,
        MemoryRecorder,
        Recorder,
        RecordingError,
        Rotation,
        TraceHeader,
    )
    from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS, REDACTED, Redactor
    from mcpactor.tracing.seeds import clock_kind, fresh_seeds
    from mcpactor.tracing.tracer import EncodedMessage, Tracer

_WHERE = {
    "TRACE_FORMAT": "recorder", "TRACE_FORMAT_VERSION": "recorder",
    "MemoryRecorder": "recorder", "Recorder": "recorder", "RecordingError": "recorder",
    "Rotation": "recorder", "TraceHeader": "recorder",
    "DEFAULT_REDACT_KEYS": "redact", "REDACTED": "redact", "Redactor": "redact",
    "clock_kind": "seeds", "fresh_seeds": "seeds",
    "EncodedMessage": "tracer", "Tracer": "tracer",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpactor.tracing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mcpactor.tracing.{module}"), name)


__all__ = [
    "DEFAULT_REDACT_KEYS",
    "REDACTED",
    "TRACE_FORMAT",
    "TRACE_FORMAT_VERSION",
    "EncodedMessage",
    "MemoryRecorder",
    "Recorder",
    "RecordingError",
    "Redactor",
    "Rotation",
    "TraceHeader",
    "Tracer",
    "clock_kind",
    "fresh_seeds",
]
