"""Turning runs into the record: medians per cell, ratios, the table, the chart."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.core import CLIENT_SUBJECT, SERVERS
from benchmarks.workloads import WORKLOADS

_METRICS = (
    "calls_per_s",
    "p50_us",
    "p99_us",
    "driver_cpu_us_per_call",
    "server_cpu_us_per_call",
)


def _median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median of every metric per (workload, server), in registration order."""
    order = {w.name: i for i, w in enumerate(WORKLOADS)}
    server_order = {s.name: i for i, s in enumerate(SERVERS)}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["workload"], r["server"]), []).append(r)
    out = []
    for (wname, sname), rs in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 99), server_order.get(kv[0][1], 99))
    ):
        ok = [r for r in rs if r["ok"]]
        row: dict[str, Any] = {
            "workload": wname, "server": sname, "rounds": len(rs), "ok_rounds": len(ok),
        }
        if ok:
            for key in _METRICS:
                row[key] = _median([r.get(key) for r in ok])
            row["protocol_version"] = ok[-1].get("protocol_version")
            # The round closest to the median rate speaks for the cell's notes.
            mid = min(ok, key=lambda r: abs((r.get("calls_per_s") or 0) - row["calls_per_s"]))
            note = (mid.get("extra") or {}).get("note")
            if note:
                row["note"] = note
        else:
            row["error"] = rs[-1].get("error", "?")
        out.append(row)
    return out


def ratios(summary: list[dict[str, Any]], subject: str) -> list[dict[str, Any]]:
    """subject / every other server, per workload (rate; and p99 where both have it).

    For a ``lower_is_better`` workload (memory) the rate ratio is still subject/other,
    so there a ratio below 1 is the good side.
    """
    by = {(r["workload"], r["server"]): r for r in summary}
    roles = {s.name: s.role for s in SERVERS}
    lower = {w.name for w in WORKLOADS if w.lower_is_better}
    subjects = {w.name: w.subject or subject for w in WORKLOADS}
    out = []
    for r in summary:
        mine_name = subjects.get(r["workload"], subject)
        if r["server"] == mine_name:
            continue
        mine = by.get((r["workload"], mine_name))
        tput = p99 = None
        if mine and mine.get("calls_per_s") and r.get("calls_per_s"):
            tput = mine["calls_per_s"] / r["calls_per_s"]
        if mine and mine.get("p99_us") and r.get("p99_us"):
            p99 = mine["p99_us"] / r["p99_us"]
        out.append({
            "workload": r["workload"], "versus": r["server"],
            "role": roles.get(r["server"], "?"), "throughput_ratio": tput, "p99_ratio": p99,
            "lower_is_better": r["workload"] in lower,
        })
    return out


def trace_costs(summary: list[dict[str, Any]], subject: str,
                variant: str = "traced") -> list[dict[str, Any]]:
    """What a variant costs (recording a trace: ``traced``; OpenTelemetry: ``otel``), per
    workload: 1 - variant rate / subject rate, or for a lower-is-better row (a worst
    latency) variant / subject - 1. ``target`` says whether a worst latency stays within
    max(2x, +15 ms) of the subject's."""
    by = {(r["workload"], r["server"]): r for r in summary}
    lower = {w.name for w in WORKLOADS if w.lower_is_better}
    out = []
    for r in summary:
        if r["server"] != f"{subject}_{variant}" or not r.get("calls_per_s"):
            continue
        plain = by.get((r["workload"], subject))
        if not plain or not plain.get("calls_per_s"):
            continue
        traced, untraced = r["calls_per_s"], plain["calls_per_s"]
        if r["workload"] in lower:
            out.append({"workload": r["workload"], "cost": traced / untraced - 1,
                        "target": traced <= max(2 * untraced, untraced + 15.0)})
        else:
            out.append({"workload": r["workload"], "cost": 1 - traced / untraced})
    return out


def scaling(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each workload with a ``baseline`` (two workers against one, Redis against
    memory): its rate over the baseline's, per server that ran both."""
    by = {(r["workload"], r["server"]): r for r in summary}
    baselines = {w.name: w.baseline for w in WORKLOADS if w.baseline}
    out = []
    for r in summary:
        base_name = baselines.get(r["workload"])
        base = by.get((base_name, r["server"])) if base_name else None
        if base and base.get("calls_per_s") and r.get("calls_per_s"):
            out.append({"workload": r["workload"], "baseline": base_name, "server": r["server"],
                        "ratio": r["calls_per_s"] / base["calls_per_s"]})
    return out


def _fmt(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def format_table(
    summary: list[dict[str, Any]], ratio_rows: list[dict[str, Any]], subject: str
) -> str:
    """The one table people read, plus the ratios under it."""
    units = {w.name: w.unit for w in WORKLOADS}
    lines = [
        f"{'workload':<20} {'server':<20} {'rate':>10} {'unit':<10} {'p50 us':>9} {'p99 us':>9} "
        f"{'drv us':>7} {'srv us':>7}  protocol",
    ]
    lines.append("-" * len(lines[0]))
    for r in summary:
        if "error" in r:
            err = r["error"].splitlines()[0][:70] if r["error"] else "?"
            lines.append(f"{r['workload']:<20} {r['server']:<20} {'ERROR':>10}  {err}")
            continue
        spec = ",.1f" if r["calls_per_s"] < 100 else ",.0f"
        line = (
            f"{r['workload']:<20} {r['server']:<20} {_fmt(r['calls_per_s'], spec):>10} "
            f"{units.get(r['workload'], ''):<10} {_fmt(r['p50_us']):>9} {_fmt(r['p99_us']):>9} "
            f"{_fmt(r['driver_cpu_us_per_call']):>7} {_fmt(r['server_cpu_us_per_call']):>7}  "
            f"{r.get('protocol_version') or '-'}"
        )
        if r.get("note"):
            line += f"  ({r['note']})"
        lines.append(line)
    lines += ["", f"{subject} / others (rate x, p99 x; ceilings are upper bounds; "
                  "for KB/session lower is better; client_* workloads: "
                  f"{CLIENT_SUBJECT} / the other clients):"]
    if not any(q["throughput_ratio"] for q in ratio_rows):
        lines.append(f"  n/a: {subject} has no successful runs")
        return "\n".join(lines)
    for q in ratio_rows:
        tput = "n/a" if q["throughput_ratio"] is None else f"{q['throughput_ratio']:.2f}x"
        p99 = "" if q["p99_ratio"] is None else f"   p99 {q['p99_ratio']:.2f}x"
        lines.append(f"  {q['workload']:<20} vs {q['versus']:<20} ({q['role']:<7}) {tput:>8}{p99}")
    scale = scaling(summary)
    if scale:
        lines += ["", "scaling (rate / the baseline workload's rate, same server):"]
        lines += [f"  {q['workload']:<20} / {q['baseline']:<20} {q['server']:<14} "
                  f"{q['ratio']:6.2f}x" for q in scale]
    costs = trace_costs(summary, subject)
    if costs:
        lines += ["", "trace recording cost (1 - traced/untraced rate; worst latencies: "
                  "traced/untraced - 1, target max(2x, +15 ms)):"]
        lines += [f"  {c['workload']:<20} {100 * c['cost']:6.1f}%"
                  + ("" if "target" not in c else
                     "  within target" if c["target"] else "  OVER TARGET")
                  for c in costs]
    costs = trace_costs(summary, subject, "otel")
    if costs:
        lines += ["", "OpenTelemetry cost (1 - otel/plain rate):"]
        lines += [f"  {c['workload']:<20} {100 * c['cost']:6.1f}%" for c in costs]
    return "\n".join(lines)


def write_chart(summary: list[dict[str, Any]], path: Path, subject: str) -> None:
    """One horizontal bar panel per workload (each has its own scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = {w.name: w.unit for w in WORKLOADS}
    lower = {w.name for w in WORKLOADS if w.lower_is_better}
    roles = {s.name: s.role for s in SERVERS}
    colors = {"subject": "#d62728", "variant": "#ff9896", "peer": "#1f77b4",
              "ceiling": "#7f7f7f"}
    names = list(dict.fromkeys(r["workload"] for r in summary))
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.2 + 1.6 * len(names)), squeeze=False)
    for ax, wname in zip(axes[:, 0], names, strict=True):
        rows = [r for r in summary if r["workload"] == wname]
        labels = [r["server"] for r in rows]
        values = [r.get("calls_per_s") or 0 for r in rows]
        ax.barh(labels, values, color=[colors.get(roles.get(lbl, ""), "#999") for lbl in labels])
        for y, r in enumerate(rows):
            if "error" in r:
                text = "error"
            else:
                text = f"{r['calls_per_s']:,.1f}" if r["calls_per_s"] < 100 else \
                    f"{r['calls_per_s']:,.0f}"
            ax.text(values[y], y, " " + text, va="center", fontsize=8)
        ax.invert_yaxis()
        better = "lower" if wname in lower else "higher"
        ax.set_title(f"{wname} ({units.get(wname, '')}, {better} is better)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.margins(x=0.15)
    fig.suptitle(f"{subject} vs peers and ceilings (medians)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))  # room for the suptitle
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cpu_ticks() -> tuple[int, int] | None:
    """(steal, total) CPU ticks of the whole machine so far (Linux; None elsewhere).

    Steal is time the hypervisor gave this VM's CPUs to someone else: a run during which
    it is high measured a slower, noisier machine than the figures suggest."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def steal_fraction(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of CPU time stolen between two :func:`cpu_ticks` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    model = platform.processor()
    try:
        for line in subprocess.run(
            ["lscpu"], capture_output=True, text=True, timeout=10
        ).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    versions: dict[str, str] = {}
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("mcp", "fastmcp", "trio", "h11", "hypercorn", "orjson", "uvicorn", "mcpactor"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = "absent"
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }
