"""``python -m benchmarks.instructions``: what trace recording costs the server, in
instructions.

The rates of ``python -m benchmarks`` move by ten points from run to run on a shared
host (hypervisor steal, a neighbour's load), which is as much as the recording cost
itself. Instructions move far less: ``valgrind --tool=callgrind`` counts the
instructions a process executes, about the same for the same work whatever else the
machine is doing. This runs the echo server over stdio untraced and traced
(``--trace``), each twice under callgrind (``--calls`` and three times as many calls,
so that start-up and shutdown cancel out), and reports the server's instructions per
call and the share that recording adds. Both workloads of the stdio benchmarks:
``pipelined`` (100 calls in flight) and ``sequential`` (one).

What it does not count: the trace sink process. It runs natively (valgrind does not
follow it), as it must: slowed fifty times it would fall behind the server, which
then encodes batches itself, and the count would measure that fallback. Its CPU is in
the rate benchmarks' server column (the process tree's); nor cache misses, nor the
sink's wake-ups on a busy core. The recorder's 50 ms timer is turned off
(``MCPACTOR_TRACE_FLUSH_SECONDS``): under callgrind the server runs some 50 times
slower, and batches must fill up as they do at full speed rather than go every few
calls.

Needs ``valgrind`` (Debian's package). A few minutes; not part of ``--quick``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.drivers.pipe_client import PipeSession

ROOT = Path(__file__).resolve().parent.parent
ECHO = "benchmarks/servers/echo_mcpactor.py:server"
RESULTS = ROOT / "benchmarks" / "results"
_SUMMARY = re.compile(rb"^summary: (\d+)$", re.M)
_CMD = re.compile(rb"^cmd: (.*)$", re.M)


def _run(outdir: Path, tag: str, calls: int, *, traced: bool, pipelined: bool) -> int:
    """Instructions of the server for one run of ``calls`` calls."""
    argv = ["valgrind", "--tool=callgrind", "--trace-children=yes",
            "--trace-children-skip-by-arg=*mcpactor.tracing.sink*",
            f"--callgrind-out-file={outdir}/{tag}.%p.out",
            sys.executable, "-m", "mcpactor", "run", ECHO]
    if traced:
        argv += ["--trace", str(outdir / f"{tag}.jsonl")]
    # Batches fill up before they go, as at full speed (the recorder's 50 ms timer would
    # hand over a batch every few calls of a process running 50 times slower).
    env = dict(os.environ, MCPACTOR_TRACE_FLUSH_SECONDS="3600")
    session = PipeSession(argv, cwd=str(ROOT), env=env, stderr_path=str(outdir / f"{tag}.err"))
    try:
        session.initialize(timeout=600)
        if pipelined:
            session.pipelined(inflight=100, duration=1e9, max_calls=calls, warmup=0)
        else:
            session.sequential(duration=1e9, max_calls=calls, warmup=0)
    finally:
        session.close(grace=300)
    for out in outdir.glob(f"{tag}.*.out"):
        data = out.read_bytes()
        cmd, total = _CMD.search(data), _SUMMARY.search(data)
        if cmd is not None and total is not None and b"mcpactor run" in cmd.group(1):
            return int(total.group(1))
    raise SystemExit(f"no callgrind count for {tag}: see {outdir / (tag + '.err')}")


def measure(calls: int, workloads: list[str]) -> dict[str, Any]:
    """Per-call instructions for each workload, untraced and traced."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcpactor-instr-") as tmp:
        outdir = Path(tmp)
        for workload in workloads:
            pipelined = workload == "pipelined"
            per_call: dict[str, float] = {}
            for traced in (False, True):
                name = "traced" if traced else "untraced"
                runs = [_run(outdir, f"{workload}-{name}-{n}", n, traced=traced,
                             pipelined=pipelined) for n in (calls, 3 * calls)]
                per_call[name] = (runs[1] - runs[0]) / (2 * calls)
            base, server = per_call["untraced"], per_call["traced"]
            results[workload] = {
                "untraced_server": round(base),
                "traced_server": round(server),
                "server_cost": (server - base) / base,
            }
            print(f"{workload:10} server instructions per call: untraced {base:9,.0f}, "
                  f"traced {server:9,.0f}: recording costs {100 * (server - base) / base:5.1f}%",
                  flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.instructions",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--calls", type=int, default=2000,
                   help="calls in the shorter run of each pair (default 2000)")
    p.add_argument("--workloads", default="pipelined,sequential",
                   help="pipelined and/or sequential (default both)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("python -m benchmarks.instructions: valgrind is not installed "
              "(Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in workloads if w not in ("pipelined", "sequential")]
    if bad or not workloads or args.calls < 1:
        print(f"python -m benchmarks.instructions: unknown workload(s) {bad or workloads}; "
              "use --workloads pipelined,sequential and --calls N >= 1", file=sys.stderr)
        return 2
    started = time.time()
    results = measure(args.calls, workloads)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "instructions-latest.json"
    out.write_text(json.dumps({
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(time.time() - started, 1),
        "calls": args.calls,
        "python": sys.version.split()[0],
        "results": results,
    }, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
