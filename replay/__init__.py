"""Deterministic replay of recorded mcpactor sessions, and tools to read traces.

``replay(load_trace(path))`` re-executes a server-side trace against the real handler
code on a virtual clock and reports the first divergence; see ``docs/trace-format.md``.
"""

from replay.engine import load_server, replay
from replay.matcher import Divergence
from replay.model import ReplayError, ReplayOptions, ReplayResult, Schedule
from replay.trace import Event, Trace, TraceError, load_trace, parse_trace

__all__ = [
    "Divergence",
    "Event",
    "ReplayError",
    "ReplayOptions",
    "ReplayResult",
    "Schedule",
    "Trace",
    "TraceError",
    "load_server",
    "load_trace",
    "parse_trace",
    "replay",
]
