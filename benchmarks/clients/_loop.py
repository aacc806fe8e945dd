"""The measuring loop every benchmark client shares, whatever its event loop.

A client script supplies ``call()`` (one ``echo`` round trip that raises unless the
echo came back) and a way to run N of them at once; this module times them and prints
the result. Kept free of trio and asyncio so that each client runs on its own loop.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import orjson

#: The text every call sends and expects back.
TEXT = "hello from the benchmark"

Call = Callable[[], Awaitable[None]]
#: Runs ``n`` copies of a coroutine function at once and returns when all have returned.
Gather = Callable[[int, Callable[[], Coroutine[Any, Any, None]]], Awaitable[None]]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line every client takes."""
    p = argparse.ArgumentParser(description="an MCP client driving the echo tool")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a Streamable HTTP endpoint")
    where.add_argument("--stdio", nargs=argparse.REMAINDER, help="the server's command")
    p.add_argument("--inflight", type=int, default=1, help="calls outstanding at once")
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--warmup", type=float, default=0.3)
    return p.parse_args(argv)


def check_echo(text: Any) -> None:
    """Raise unless ``text`` is what every call sends."""
    if text != TEXT:
        raise RuntimeError(f"echo returned {text!r}")


async def measure(args: argparse.Namespace, call: Call, gather: Gather) -> dict[str, Any]:
    """Warm up, then keep ``args.inflight`` calls going for ``args.duration`` seconds."""
    samples: list[int] = []
    record = False
    stop = 0.0

    async def worker() -> None:
        clock = time.perf_counter_ns
        while time.perf_counter() < stop:
            t0 = clock()
            await call()
            if record:
                samples.append(clock() - t0)

    stop = time.perf_counter() + args.warmup
    await gather(args.inflight, worker)
    record = True
    cpu0, t0 = time.process_time(), time.perf_counter()
    stop = t0 + args.duration
    await gather(args.inflight, worker)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    samples.sort()
    n = len(samples)
    if not n:
        raise RuntimeError("no call completed")
    return {
        "calls": n,
        "seconds": seconds,
        "calls_per_s": n / seconds,
        # Latency only means one thing with one call in flight.
        "p50_us": samples[n // 2] / 1000 if args.inflight == 1 else None,
        "p99_us": samples[min(n - 1, n * 99 // 100)] / 1000 if args.inflight == 1 else None,
        "client_cpu_us_per_call": cpu / n * 1e6,
    }


def report(result: dict[str, Any], protocol_version: str | None) -> None:
    """Print the one line the harness reads."""
    result["protocol_version"] = protocol_version
    sys.stdout.buffer.write(orjson.dumps(result) + b"\n")
    sys.stdout.flush()
