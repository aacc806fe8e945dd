"""Benchmark harness: servers x workloads, interleaved rounds, medians, one table.

- :mod:`benchmarks.core`: configuration, the servers under test, their processes;
- :mod:`benchmarks.workloads`: what is measured (``@workload`` functions; its
  docstring shows how to add one);
- :mod:`benchmarks.report`: medians, ratios, the table, the chart.

Every round starts all servers (their imports overlap), then runs each workload
across all servers in turn (A B C A B C ...), with the server order rotated per round.
"""

from __future__ import annotations

import datetime as _dt
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

import orjson

from benchmarks.core import RESULTS_DIR, SERVERS, Config, ServerSpec, Target
from benchmarks.drivers.pipe_client import BenchError
from benchmarks.report import (
    cpu_ticks,
    format_table,
    machine_info,
    ratios,
    scaling,
    steal_fraction,
    summarize,
    write_chart,
)
from benchmarks.workloads import WORKLOADS, Workload, workload

__all__ = ["SERVERS", "WORKLOADS", "Config", "Target", "run", "run_rounds", "workload"]


def _selected(cfg: Config) -> tuple[list[ServerSpec], list[Workload]]:
    servers = [s for s in SERVERS if cfg.servers is None or s.name in cfg.servers]
    only = {"http": ("http", "http_sse")}.get(cfg.only or "", (cfg.only,))
    workloads = [w for w in WORKLOADS if (cfg.only is None or w.transport in only)
                 and (w.quick or not cfg.quick) and (cfg.optional or not w.optional)]
    return servers, workloads


def _applies(w: Workload, spec: ServerSpec) -> bool:
    if w.transport not in spec.commands:
        return False
    if w.servers is not None and spec.name not in w.servers:
        return False
    return spec.workloads is None or w.name in spec.workloads


def run_rounds(cfg: Config, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every round: start all servers, then workload by workload, server after server."""
    servers, workloads = _selected(cfg)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcpactor-bench-") as tmpdir:
        for rnd in range(cfg.rounds):
            # Rotating the start keeps any drift (thermal, page cache) off one server.
            order = servers[rnd % len(servers) :] + servers[: rnd % len(servers)]
            targets = {s.name: Target(s, cfg, tmpdir) for s in order}
            try:
                for spec in order:
                    targets[spec.name].spawn({w.needs for w in workloads if _applies(w, spec)})
                for t in targets.values():
                    t.ready()
                for w in workloads:
                    if w.once and rnd > 0:
                        continue
                    for spec in order:
                        if _applies(w, spec):
                            runs.append(_run_one(w, targets[spec.name], cfg, rnd, log))
            finally:
                for t in targets.values():
                    t.close()
    return runs


def _run_one(
    w: Workload, target: Target, cfg: Config, rnd: int, log: Callable[[str], None]
) -> dict[str, Any]:
    row: dict[str, Any] = {"round": rnd, "server": target.spec.name, "workload": w.name}
    t0 = time.perf_counter()
    try:
        m = w.fn(target, cfg)
        row.update(ok=True, **m.as_dict())
        log(f"  r{rnd} {w.name:<20} {target.spec.name:<20} {m.calls_per_s:>10.1f} {w.unit}")
    except Exception as exc:
        msg = str(exc) or type(exc).__name__
        row.update(ok=False, error=msg[:1000])
        if not isinstance(exc, BenchError | OSError):
            row["traceback"] = traceback.format_exc()[-2000:]
        log(f"  r{rnd} {w.name:<20} {target.spec.name:<20} ERROR {msg.splitlines()[0][:100]}")
    row["wall_s"] = time.perf_counter() - t0
    return row


def run(cfg: Config, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run everything, print the table, write JSON and the chart; returns the report."""
    started = _dt.datetime.now(_dt.UTC)
    t0 = time.perf_counter()
    ticks = cpu_ticks()
    runs = run_rounds(cfg, log)
    stolen = steal_fraction(ticks, cpu_ticks())
    summary = summarize(runs)
    ratio_rows = ratios(summary, cfg.subject)
    report = {
        "started": started.isoformat(timespec="seconds"),
        "wall_s": time.perf_counter() - t0,
        "config": {k: v for k, v in vars(cfg).items()},
        "machine": {**machine_info(), "steal_fraction": stolen},
        "servers": {s.name: {"role": s.role, "note": s.note} for s in SERVERS},
        "workloads": {w.name: {"transport": w.transport, "unit": w.unit,
                               "lower_is_better": w.lower_is_better} for w in WORKLOADS},
        "summary": summary,
        "ratios": ratio_rows,
        "scaling": scaling(summary),
        "runs": runs,
    }
    log("")
    log(format_table(summary, ratio_rows, cfg.subject))
    if stolen is not None:
        log(f"\nhypervisor steal during the run: {100 * stolen:.1f}% of CPU time"
            + (" (a busy host: expect noisy figures)" if stolen > 0.05 else ""))
    RESULTS_DIR.mkdir(exist_ok=True)
    blob = orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    # A run of the optional workloads alone (the scale-out deployments) has its own
    # record: it must not replace the main run's latest.json.
    _, selected = _selected(cfg)
    prefix = "scaleout-" if selected and all(w.optional for w in selected) else ""
    (RESULTS_DIR / f"{prefix}{stamp}.json").write_bytes(blob)
    (RESULTS_DIR / f"{prefix}latest.json").write_bytes(blob)
    try:
        write_chart(summary, RESULTS_DIR / f"{prefix}latest.png", cfg.subject)
    except ImportError as exc:  # the chart is a convenience; the table and JSON are the record
        log(f"chart skipped: {exc}")
    log(
        f"\nwrote {RESULTS_DIR / (prefix + stamp + '.json')}, {prefix}latest.json, "
        f"{prefix}latest.png in {report['wall_s']:.1f}s"
    )
    return report
