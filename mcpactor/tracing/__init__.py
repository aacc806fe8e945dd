"""Trace events and recorders: every message, timer, cancellation and handler run."""

from mcpactor.tracing.recorder import JsonlRecorder, MemoryRecorder, TraceHeader
from mcpactor.tracing.tracer import Tracer

__all__ = ["JsonlRecorder", "MemoryRecorder", "TraceHeader", "Tracer"]
