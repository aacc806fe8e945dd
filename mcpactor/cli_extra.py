"""Subcommands that live in other modules (replay, traces, benchmarks, the demo, call).

Each package that adds commands exposes ``register(subparsers)``; keeping the wiring
here lets ``mcpactor/cli.py`` stay small and lets a package be absent without breaking
the rest of the command.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

_PROVIDERS = ("mcpactor.replay.cli", "mcpactor.demo", "mcpactor.cli_call")


def register(sub: Any) -> None:
    """Add every available provider's subcommands to ``sub``."""
    for name in _PROVIDERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        module.register(sub)
    bench = sub.add_parser("bench", help="run the benchmarks (source checkout only)")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options for python -m benchmarks")
    bench.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    import runpy
    import sys

    from mcpactor.cli import CliError

    try:
        importlib.import_module("benchmarks")
    except ImportError:
        raise CliError(
            "the benchmarks live in the source checkout: run this from the repository root"
        ) from None
    sys.argv = ["benchmarks", *args.rest]
    runpy.run_module("benchmarks", run_name="__main__")
    return 0
