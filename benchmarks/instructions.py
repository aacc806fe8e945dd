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

The ``sink`` workload counts the sink's side offline: it records a pipelined run
natively, rebuilds the parts the recorder staged (32 events each, as ``marshal``
carries them) from the trace, and counts the sink's encoding of them
(``sink.compact_block``) under callgrind, the difference of one and three passes.

Needs ``valgrind`` (Debian's package). A few minutes; not part of ``--quick``.
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.drivers.pipe_client import PipeSession

ROOT = Path(__file__).resolve().parent.parent
ECHO = "benchmarks/servers/echo_mcpactor.py:server"
OTEL_ECHO = "benchmarks/servers/echo_otel.py:server"
RESULTS = ROOT / "benchmarks" / "results"
_SUMMARY = re.compile(rb"^summary: (\d+)$", re.M)
_CMD = re.compile(rb"^cmd: (.*)$", re.M)


def _run(outdir: Path, tag: str, calls: int, *, traced: bool, pipelined: bool,
         otel: bool = False) -> int:
    """Instructions of the server for one run of ``calls`` calls (``otel``: with
    OpenTelemetry on, the SDK exporting to nowhere: ``servers/echo_otel.py``)."""
    argv = ["valgrind", "--tool=callgrind", "--trace-children=yes",
            "--trace-children-skip-by-arg=*mcpactor.tracing.sink*",
            f"--callgrind-out-file={outdir}/{tag}.%p.out",
            sys.executable, "-m", "mcpactor", "run", OTEL_ECHO if otel else ECHO]
    if otel:
        argv.append("--otel")
    if traced:
        argv += ["--trace", str(outdir / f"{tag}.jsonl")]
    # Batches fill up before they go, as at full speed (the recorder's 50 ms timer would
    # hand over a batch every few calls of a process running 50 times slower).
    # A fixed string-hash seed: `mcpactor run --trace` would otherwise start itself again
    # to get one (both runs get it, so that they are the same interpreter).
    env = dict(os.environ, MCPACTOR_TRACE_FLUSH_SECONDS="3600", PYTHONHASHSEED="1")
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


WORKLOADS = ("pipelined", "sequential", "sink", "otel")


def staged_parts(trace: Path) -> tuple[list[bytes], int]:
    """The chunks a recorder would have handed to the sink for ``trace`` (512 records
    each, flat, as the session and the scheduler log them, in the frame the recorder
    sends: packed by the compiled hooks where they were built, else ``marshal`` of
    ``(first seq, items)``), and the number of calls in it."""
    from mcpactor.tracing.encode import HANDLER_KINDS
    from mcpactor.tracing.tracer import FLAT_FIELDS, WIDTH, pad

    lines = trace.read_bytes().splitlines()
    origin = int(json.loads(lines[0])["clock"]["origin_ns"])
    records: list[tuple[Any, ...]] = []
    calls = 0
    numbers: dict[str, int] = {}
    for line in lines[1:]:
        ev = json.loads(line)
        kind = ev.pop("kind")
        del ev["seq"]
        if kind == "sched":
            new: list[Any] = []
            for tid, name in ev.get("new", {}).items():
                numbers[name] = int(tid)
                parent, _, ordinal = name.rpartition("/")
                new.extend((int(tid), None, name) if not parent
                           else (int(tid), numbers[parent], int(ordinal)))
            records.append((0, None, None, kind, ev["now"], tuple(ev["run"]),
                            tuple(new) or None))
            continue
        if kind == "read":
            v = bytes.fromhex(ev["v"]) if ev["src"] == "urandom" else ev["v"]
            records.append((0, None, None, kind, ev["task"], ev["src"], v))
            continue
        t = origin + round(ev.pop("t") * 1e9)
        actor = ev.pop("actor")
        head = (t, ev.pop("session"), None if kind in HANDLER_KINDS else actor, kind)
        if "msg" in ev:
            ev["msg"] = orjson.dumps(ev["msg"])  # compact, as the wire carried it
        fields = FLAT_FIELDS.get(kind)
        if fields is not None and tuple(ev) == fields:
            records.append(pad((*head, *ev.values())))
        else:
            records.append(pad((*head, ev)))
        calls += kind == "handler_finished"
    flat = [item for record in records for item in record]
    step = 512 * WIDTH
    parts = [_frame(i // WIDTH + 1, flat[i : i + step]) for i in range(0, len(flat), step)]
    return parts, calls


def _frame(first: int, items: list[Any]) -> bytes:
    # As sinkclient.ProcessOutput sends a chunk (a leading b"P" or b"C" says which).
    from mcpactor.tracing import hooks

    compiled = hooks.native()
    if compiled is not None:
        return b"P" + compiled.pack(first, items, marshal.dumps)
    return b"C" + marshal.dumps((first, items))


def unframe(part: bytes) -> tuple[int, list[Any]]:
    """A staged part's ``(first seq, items)``, as the sink reads its frame."""
    if part[:1] == b"P":
        from mcpactor.tracing import _hooks

        return _hooks.unpack(part[1:], marshal.loads)
    first, items = marshal.loads(part[1:])
    return first, items


def sink_spec(trace: Path) -> dict[str, Any]:
    """The sink's spec for writing ``trace`` again (its header and clock origin)."""
    header = json.loads(trace.read_bytes().splitlines()[0])
    return {"path": "t.jsonl", "split": False, "header": header,
            "origin": int(header["clock"]["origin_ns"]),
            "keys": header.get("redacted_keys", [])}


def _encode_parts(path: str, passes: int) -> None:
    # What runs under callgrind for the sink workload.
    from mcpactor.tracing.sink import MemoryFiles, SinkCore

    spec, parts = marshal.loads(Path(path).read_bytes())
    for _ in range(passes):
        core = SinkCore(spec, files=MemoryFiles().open)
        for part in parts:
            core.chunk(*unframe(part))


def _count(outdir: Path, tag: str, argv: list[str]) -> int:
    out = outdir / f"{tag}.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                   cwd=str(ROOT), check=True, capture_output=True)
    total = _SUMMARY.search(out.read_bytes())
    if total is None:
        raise SystemExit(f"no callgrind count in {out}")
    return int(total.group(1))


def measure_sink(outdir: Path, calls: int) -> dict[str, Any]:
    """The sink's instructions per call, encoding the staged events of a pipelined run."""
    trace = outdir / "sink-source.jsonl"
    argv = [sys.executable, "-m", "mcpactor", "run", ECHO, "--trace", str(trace)]
    session = PipeSession(argv, cwd=str(ROOT), stderr_path=str(outdir / "sink-source.err"))
    try:
        session.initialize(timeout=60)
        session.pipelined(inflight=100, duration=1e9, max_calls=calls, warmup=0)
    finally:
        session.close(grace=60)
    parts, n = staged_parts(trace)
    (outdir / "parts.bin").write_bytes(marshal.dumps((sink_spec(trace), parts)))
    counts = [_count(outdir, f"sink-{passes}", [
        sys.executable, "-c", "import sys; from benchmarks.instructions import _encode_parts; "
        "_encode_parts(sys.argv[1], int(sys.argv[2]))", str(outdir / "parts.bin"), str(passes)])
        for passes in (1, 3)]
    per_call = (counts[1] - counts[0]) / (2 * n)
    print(f"sink       instructions per call, encoding the recorded chunks: {per_call:9,.0f} "
          f"({n:,} calls)", flush=True)
    return {"sink_per_call": round(per_call), "calls": n}


def measure(calls: int, workloads: list[str]) -> dict[str, Any]:
    """Per-call instructions for each workload, untraced and traced."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcpactor-instr-") as tmp:
        outdir = Path(tmp)
        for workload in workloads:
            if workload == "sink":
                results[workload] = measure_sink(outdir, 3 * calls)
                continue
            if workload == "otel":
                results[workload] = measure_otel(outdir, calls)
                continue
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
    if "pipelined" in results and "sink" in results:
        results["all_recording"] = whole_cost(results["pipelined"], results["sink"])
        print(f"all recording work, 100 in flight (server's share + sink): "
              f"{100 * results['all_recording']['cost']:5.1f}% of the untraced server's "
              "instructions: what the rates show where the sink has no core of its own",
              flush=True)
    return results


def measure_otel(outdir: Path, calls: int) -> dict[str, Any]:
    """What OpenTelemetry costs the server (``--otel``, spans and metrics of every
    request made, batched and dropped), per call, 100 in flight and one at a time."""
    out: dict[str, Any] = {}
    for pipelined in (True, False):
        shape = "pipelined" if pipelined else "sequential"
        per_call = {}
        for otel in (False, True):
            name = "otel" if otel else "plain"
            runs = [_run(outdir, f"otel-{shape}-{name}-{n}", n, traced=False,
                         pipelined=pipelined, otel=otel) for n in (calls, 3 * calls)]
            per_call[name] = (runs[1] - runs[0]) / (2 * calls)
        base, on = per_call["plain"], per_call["otel"]
        out[shape] = {"plain_server": round(base), "otel_server": round(on),
                      "cost": (on - base) / base}
        print(f"otel {shape:10} server instructions per call: off {base:9,.0f}, on "
              f"{on:9,.0f}: OpenTelemetry costs {100 * (on - base) / base:5.1f}%", flush=True)
    return out


def whole_cost(server: dict[str, Any], sink: dict[str, Any]) -> dict[str, Any]:
    """The recording's whole work per call (the server's added instructions and the
    sink's) against the untraced server's: on a machine whose cores are all busy (the
    rate benchmarks on two cores), the throughput cost follows this, not the server's
    share alone."""
    added = server["traced_server"] - server["untraced_server"] + sink["sink_per_call"]
    return {"instructions_per_call": added, "cost": added / server["untraced_server"]}


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.instructions",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--calls", type=int, default=2000,
                   help="calls in the shorter run of each pair (default 2000)")
    p.add_argument("--workloads", default="pipelined,sequential",
                   help="pipelined, sequential, sink and/or otel (OpenTelemetry's cost; "
                   "default: the first two)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("python -m benchmarks.instructions: valgrind is not installed "
              "(Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad or not workloads or args.calls < 1:
        print(f"python -m benchmarks.instructions: unknown workload(s) {bad or workloads}; "
              "use --workloads pipelined,sequential,sink,otel and --calls N >= 1",
              file=sys.stderr)
        return 2
    started = time.time()
    results = measure(args.calls, workloads)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "instructions-latest.json"
    # Workloads not measured this time keep their last figures (each says when).
    try:
        kept = json.loads(out.read_text())["results"]
    except (OSError, ValueError, KeyError, TypeError):
        kept = {}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    for result in results.values():
        result.setdefault("calls", args.calls)
        result["measured"] = stamp
    out.write_text(json.dumps({
        "started": stamp,
        "wall_s": round(time.time() - started, 1),
        "python": sys.version.split()[0],
        "results": {**kept, **results},
    }, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
