"""Deterministic replay of recorded mcpactor sessions, and tools to read traces.

``replay(load_trace(path))`` re-executes a server-side trace against the real handler
code on a virtual clock and reports the first divergence; see ``docs/trace-format.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.engine import load_server, replay
    from replay.matcher import Divergence
    from replay.model import ReplayError, ReplayOptions, ReplayResult, Schedule
    from replay.trace import Event, Trace, TraceError, load_trace, parse_trace

# Loaded on first use: the ``mcpactor`` command registers its replay subcommands on every
# start, ``mcpactor run`` included, and the engine brings trio.testing (and with it
# pytest) — a third of a second before a stdio server could answer.
_WHERE = {
    "load_server": "replay.engine", "replay": "replay.engine",
    "Divergence": "replay.matcher",
    "ReplayError": "replay.model", "ReplayOptions": "replay.model",
    "ReplayResult": "replay.model", "Schedule": "replay.model",
    "Event": "replay.trace", "Trace": "replay.trace", "TraceError": "replay.trace",
    "load_trace": "replay.trace", "parse_trace": "replay.trace",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
