"""Deterministic replay of recorded mcpactor sessions, and tools to read traces.

``replay(load_trace(path))`` re-executes a server-side trace against the real handler
code on a virtual clock and reports the first divergence; see ``docs/trace-format.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import load_server, replay
    from .matcher import Divergence
    from .model import ReplayError, ReplayOptions, ReplayResult, Schedule
    from .trace import Event, Trace, TraceError, load_trace, parse_trace

# Loaded on first use: the ``mcpactor`` command registers its replay subcommands on every
# start, ``mcpactor run`` included, and the engine brings trio.testing (and with it
# pytest) — a third of a second before a stdio server could answer.
_WHERE = {
    "load_server": "mcpactor.replay.engine", "replay": "mcpactor.replay.engine",
    "Divergence": "mcpactor.replay.matcher",
    "ReplayError": "mcpactor.replay.model", "ReplayOptions": "mcpactor.replay.model",
    "ReplayResult": "mcpactor.replay.model", "Schedule": "mcpactor.replay.model",
    "Event": "mcpactor.replay.trace", "Trace": "mcpactor.replay.trace", "TraceError": "mcpactor.replay.trace",
    "load_trace": "mcpactor.replay.trace", "parse_trace": "mcpactor.replay.trace",
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
