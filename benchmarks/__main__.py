"""``python -m benchmarks``: run the benchmark suite (see benchmarks/README.md).

Re-executes itself inside ``.cache/bench-venv`` (creating it with
``scripts/bench-venv.sh`` when needed), so the peers' dependencies never enter the
project's own environment and every server runs on the same interpreter.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".cache" / "bench-venv"


def _ensure_bench_venv(argv: list[str]) -> None:
    if Path(sys.prefix).resolve() == VENV.resolve() or os.environ.get("MCPACTOR_BENCH_NO_VENV"):
        return
    # The script is idempotent and returns at once when nothing changed.
    subprocess.run(["bash", str(ROOT / "scripts" / "bench-venv.sh")], check=True, timeout=900)
    python = VENV / "bin" / "python"
    os.chdir(ROOT)
    os.execv(python, [str(python), "-m", "benchmarks", *argv])


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks", description="mcpactor vs peers and ceilings"
    )
    p.add_argument("--quick", action="store_true", help="one short round (<1 min); what CI runs")
    p.add_argument("--only", choices=["stdio", "http", "client", "scaleout"],
                   help="only this transport's workloads (client: the client benchmarks; "
                        "scaleout: workers behind HAProxy, with and without Redis, a few "
                        "minutes, never part of a plain run)")
    p.add_argument("--workloads", help="comma-separated workload names (default: all)")
    p.add_argument("--servers", help="comma-separated server names (default: all)")
    p.add_argument("--rounds", type=int, help="rounds (default 3, quick 1)")
    p.add_argument("--duration", type=float, help="seconds per measurement (default 2, quick 0.4)")
    p.add_argument(
        "--inflight", type=int, help="calls outstanding in stdio_pipelined (default 100)"
    )
    p.add_argument("--http-conns", type=int, help="connections in http_concurrent (default 10)")
    p.add_argument("--spin-us", type=float, help="stdio driver spin before blocking (default 200)")
    p.add_argument("--subject", help="server the ratios are computed for (default mcpactor)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)  # before the re-exec, so --help works anywhere
    _ensure_bench_venv(argv)

    from benchmarks.harness import SERVERS, Config, run

    cfg = Config.quick_mode() if args.quick else Config()
    for name in ("rounds", "duration", "inflight", "http_conns", "spin_us", "subject", "only"):
        value = getattr(args, name)
        if value is not None:
            setattr(cfg, name, value)
    if args.servers:
        cfg.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
        unknown = set(cfg.servers) - {s.name for s in SERVERS}
        if unknown:
            sys.exit(f"unknown servers: {', '.join(sorted(unknown))}")
    if args.workloads:
        from benchmarks.harness import WORKLOADS

        wanted = [w.strip() for w in args.workloads.split(",") if w.strip()]
        unknown = set(wanted) - {w.name for w in WORKLOADS}
        if unknown:
            sys.exit(f"unknown workloads: {', '.join(sorted(unknown))}")
        WORKLOADS[:] = [w for w in WORKLOADS if w.name in wanted]
        cfg.optional = True  # named workloads run, optional ones included
    if args.only == "scaleout":
        cfg.optional = True
    report = run(cfg)
    # A smoke test that cannot fail is no test: mcpactor's own rows must all have run.
    # (A peer's failure is reported in its row and left to the reader.)
    roles = {s.name: s.role for s in SERVERS}
    broken = sorted({f"{r['workload']} / {r['server']}" for r in report["runs"]
                     if not r.get("ok") and roles.get(r["server"]) in ("subject", "variant")})
    if broken:
        sys.exit(f"mcpactor failed in: {', '.join(broken)} (see the table and the JSON)")


if __name__ == "__main__":
    main()
