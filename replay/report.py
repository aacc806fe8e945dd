"""Printing a replay's verdict: faithful, or the first divergence with its context."""

from __future__ import annotations

from typing import TextIO

import orjson

from mcpactor.tracing.encode import dumps

from .matcher import Divergence
from .model import ReplayResult
from .render import event_line


def _json(value: object) -> str:
    return dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def print_divergence(div: Divergence, out: TextIO) -> None:
    """The first divergence: where, expected vs actual, a JSON diff, what came before."""
    where = f"event #{div.seq}" if div.seq is not None else "the end of the trace"
    print(f"DIVERGED at {where}: {div.reason}", file=out)
    if div.context:
        print("  recorded context (reproduced):", file=out)
        for ev in div.context:
            print(f"    {event_line(ev)}", file=out)
    if div.expected is not None:
        print(f"  expected: {event_line(div.expected)}", file=out)
    else:
        print("  expected: (nothing: the recording has no such event)", file=out)
    if div.actual is not None:
        print(f"  actual:   {event_line(div.actual)}", file=out)
    else:
        print("  actual:   (nothing: the replay never produced it)", file=out)
    if div.diff:
        print("  diff (recorded -> replayed):", file=out)
        for line in div.diff:
            print(f"    {line}", file=out)
    elif div.expected is not None and div.actual is not None:
        print(f"  expected json: {_json(div.expected)}", file=out)
        print(f"  actual json:   {_json(div.actual)}", file=out)


def print_verdict(result: ReplayResult, wall_seconds: float, out: TextIO) -> None:
    """One summary line (after the divergence, if any)."""
    if result.divergence is not None:
        print_divergence(result.divergence, out)
        print(f"replay: DIVERGED after reproducing {result.reproduced} of {result.total} events "
              f"({result.attempts} schedule(s) tried)", file=out)
        return
    print(
        f"replay: faithful ({result.mode}): {result.reproduced}/{result.total} events "
        f"reproduced ({result.virtual_seconds:.3f} s of virtual time in {wall_seconds:.3f} s, "
        f"{result.attempts} schedule(s) tried)",
        file=out,
    )
