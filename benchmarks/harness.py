"""Benchmark harness: servers x workloads, interleaved rounds, medians, one table.

Adding a workload is one decorated function::

    @workload("stdio_list_tools", transport="stdio")
    def stdio_list_tools(target: Target, cfg: Config) -> Measurement:
        session = target.stdio_session()          # started and initialized for this round
        ...
        return Measurement(calls=..., seconds=..., calls_per_s=...)

``target.stdio_session()`` is a live, initialized :class:`PipeSession` shared by every
stdio workload of the round; ``target.http_endpoint()`` is ``(host, port, pid)`` of a
server started for the round; ``target.command(transport)`` gives the argv to spawn
fresh processes yourself. Raise anything to turn the cell into an error row.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.drivers import http_client
from benchmarks.drivers.pipe_client import BenchError, Measurement, PipeSession, setup_time

ROOT = Path(__file__).resolve().parent.parent
SERVERS_DIR = Path(__file__).resolve().parent / "servers"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
HOST = "127.0.0.1"
SUBJECT = "mcpactor"


# -- configuration -------------------------------------------------------------------


@dataclass
class Config:
    """Knobs shared by all workloads; ``--quick`` shrinks them to fit CI."""

    rounds: int = 3
    duration: float = 2.0
    warmup: float = 0.3
    inflight: int = 100
    http_conns: int = 10
    setup_samples: int = 5
    spin_us: float = 200.0
    quick: bool = False
    only: str | None = None
    servers: list[str] | None = None
    subject: str = SUBJECT

    @classmethod
    def quick_mode(cls) -> Config:
        """Settings under which the whole suite takes less than a minute."""
        return cls(rounds=1, duration=0.4, warmup=0.1, setup_samples=1, quick=True)


# -- servers --------------------------------------------------------------------------

Argv = Callable[[int], list[str]]  # port -> argv (stdio ignores the port)


@dataclass
class ServerSpec:
    """A server under test: its role and how to launch it per transport."""

    name: str
    role: str  # "subject" | "peer" | "ceiling"
    commands: dict[str, Argv]
    note: str = ""


def _py(script: str, *args: str) -> Argv:
    def argv(port: int) -> list[str]:
        return [sys.executable, str(SERVERS_DIR / script), *(a.format(port=port) for a in args)]

    return argv


def _mcpactor_cli(*args: str) -> Argv:
    # The console script of the bench venv, so the editable install is what runs.
    exe = str(Path(sys.executable).with_name("mcpactor"))

    def argv(port: int) -> list[str]:
        return [exe, "run", "benchmarks/servers/echo_mcpactor.py:server", *args]

    return argv


SERVERS: list[ServerSpec] = [
    ServerSpec(
        "mcpactor",
        "subject",
        {"stdio": _mcpactor_cli(), "http": _py("echo_mcpactor.py", "http", "{port}")},
    ),
    ServerSpec(
        "sdk_lowlevel",
        "peer",
        {
            "stdio": _py("echo_sdk_lowlevel.py"),
            "http": _py("echo_sdk_lowlevel.py", "http", "{port}"),
        },
        "mcp 2.3.0 low-level Server; HTTP: uvicorn, JSON responses",
    ),
    ServerSpec(
        "sdk_decorator",
        "peer",
        {
            "stdio": _py("echo_sdk_decorator.py"),
            "http": _py("echo_sdk_decorator.py", "http", "{port}"),
        },
        "mcp 2.3.0 MCPServer (ex-FastMCP); HTTP: uvicorn, JSON responses",
    ),
    ServerSpec(
        "fastmcp",
        "peer",
        {"stdio": _py("echo_fastmcp.py"), "http": _py("echo_fastmcp.py", "http", "{port}")},
        "fastmcp 4.1.2; HTTP: uvicorn, JSON responses",
    ),
    ServerSpec(
        "bare_pipe_blocking",
        "ceiling",
        {"stdio": _py("bare_pipe_blocking.py")},
        "os.read/os.write loop",
    ),
    ServerSpec(
        "bare_pipe_trio", "ceiling", {"stdio": _py("bare_pipe_trio.py", "loop")}, "trio, one loop"
    ),
    ServerSpec(
        "bare_pipe_trio_tasks",
        "ceiling",
        {"stdio": _py("bare_pipe_trio.py", "tasks")},
        "trio, task per request + batching writer",
    ),
    ServerSpec(
        "bare_h11_trio", "ceiling", {"http": _py("bare_h11_trio.py", "{port}")}, "h11 on trio"
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    # Banners, colour and update checks are console noise on stderr, not server work.
    env.update(
        FASTMCP_SHOW_SERVER_BANNER="false",
        FASTMCP_CHECK_FOR_UPDATES="off",
        FASTMCP_LOG_LEVEL="WARNING",
        NO_COLOR="1",
        PYTHONUNBUFFERED="0",
    )
    return env


def _stderr_tail(path: str, limit: int = 800) -> str:
    try:
        text = Path(path).read_text(errors="replace").strip()
    except OSError:
        return ""
    return text[-limit:]


def _with_stderr(message: str, path: str) -> str:
    """First line: the message and the stderr's last line (usually the exception); then the tail."""
    tail = _stderr_tail(path)
    if not tail:
        return message
    return f"{message}: {tail.splitlines()[-1]}\n{tail}"


class HttpServerProcess:
    """A server process listening on a loopback port, killed on close."""

    def __init__(self, argv: list[str], port: int, stderr_path: str) -> None:
        self.port = port
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
            cwd=ROOT,
            env=_server_env(),
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Poll until the port accepts connections or the process dies."""
        stop = time.monotonic() + timeout
        while time.monotonic() < stop:
            if self.proc.poll() is not None:
                raise BenchError(
                    _with_stderr(f"server exited with {self.proc.returncode}", self.stderr_path)
                )
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise BenchError(f"server not listening after {timeout:g}s")

    def close(self) -> None:
        """SIGTERM the process group, then SIGKILL."""
        import signal

        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._stderr.close()


class Target:
    """One server within one round: lazily started fixtures, torn down at round end."""

    def __init__(self, spec: ServerSpec, cfg: Config, tmpdir: str) -> None:
        self.spec = spec
        self.cfg = cfg
        self.tmpdir = tmpdir
        self._stdio: PipeSession | BaseException | None = None
        self._http: HttpServerProcess | BaseException | None = None

    def supports(self, transport: str) -> bool:
        """Whether the server has a command for this transport."""
        return transport in self.spec.commands

    def command(self, transport: str, port: int = 0) -> list[str]:
        """Argv that launches this server on ``transport``."""
        return self.spec.commands[transport](port)

    def stderr_path(self, what: str) -> str:
        """A file for a process's stderr, kept until the run ends for error reports."""
        return os.path.join(self.tmpdir, f"{self.spec.name}.{what}.stderr")

    def spawn(self, transports: set[str]) -> None:
        """Start the round's processes without waiting, so their imports overlap."""
        try:
            if "stdio" in transports and self.supports("stdio") and self._stdio is None:
                self._stdio = PipeSession(
                    self.command("stdio"),
                    cwd=str(ROOT),
                    env=_server_env(),
                    stderr_path=self.stderr_path("stdio"),
                    spin_us=self.cfg.spin_us,
                )
        except Exception as exc:
            self._stdio = exc
        try:
            if "http" in transports and self.supports("http") and self._http is None:
                port = _free_port()
                self._http = HttpServerProcess(
                    self.command("http", port), port, self.stderr_path("http")
                )
        except Exception as exc:
            self._http = exc

    def ready(self) -> None:
        """Finish starting what spawn() began; failures are kept and re-raised on use."""
        if isinstance(self._stdio, PipeSession):
            try:
                self._stdio.initialize()
            except Exception as exc:
                self._stdio.close()
                self._stdio = BenchError(_with_stderr(str(exc), self.stderr_path("stdio")))
        if isinstance(self._http, HttpServerProcess):
            try:
                self._http.wait_ready()
            except Exception as exc:
                self._http.close()
                self._http = exc

    def stdio_session(self) -> PipeSession:
        """The round's initialized stdio session."""
        if self._stdio is None:
            self.spawn({"stdio"})
            self.ready()
        if isinstance(self._stdio, BaseException):
            raise self._stdio
        assert self._stdio is not None
        return self._stdio

    def http_endpoint(self) -> tuple[str, int, int]:
        """(host, port, pid) of the round's HTTP server."""
        if self._http is None:
            self.spawn({"http"})
            self.ready()
        if isinstance(self._http, BaseException):
            raise self._http
        assert self._http is not None
        return HOST, self._http.port, self._http.proc.pid

    def close(self) -> None:
        """Stop everything this target started."""
        if isinstance(self._stdio, PipeSession):
            self._stdio.close()
        if isinstance(self._http, HttpServerProcess):
            self._http.close()
        self._stdio = self._http = None


# -- workloads ------------------------------------------------------------------------

WorkloadFn = Callable[[Target, Config], Measurement]


@dataclass
class Workload:
    """A named measurement over one transport."""

    name: str
    transport: str
    fn: WorkloadFn
    unit: str = "calls/s"
    servers: set[str] | None = None  # None: every server with the transport


WORKLOADS: list[Workload] = []


def workload(
    name: str, *, transport: str, unit: str = "calls/s", servers: set[str] | None = None
) -> Callable[[WorkloadFn], WorkloadFn]:
    """Register ``fn`` as a workload; the table lists workloads in registration order."""

    def register(fn: WorkloadFn) -> WorkloadFn:
        WORKLOADS.append(Workload(name, transport, fn, unit, servers))
        return fn

    return register


@workload("stdio_seq", transport="stdio")
def stdio_seq(target: Target, cfg: Config) -> Measurement:
    """tools/call echo over stdio, one call in flight, per-call latency."""
    return target.stdio_session().sequential(duration=cfg.duration, warmup=cfg.warmup)


@workload("stdio_pipelined", transport="stdio")
def stdio_pipelined(target: Target, cfg: Config) -> Measurement:
    """tools/call echo over stdio with ``cfg.inflight`` calls kept outstanding."""
    return target.stdio_session().pipelined(
        inflight=cfg.inflight, duration=cfg.duration, warmup=cfg.warmup
    )


@workload("stdio_setup", transport="stdio", unit="sessions/s")
def stdio_setup(target: Target, cfg: Config) -> Measurement:
    """Spawn + initialize of a fresh stdio server; p50/p99 are of setup time."""
    times: list[float] = []
    version = None
    t0 = time.perf_counter()
    for _ in range(cfg.setup_samples):
        try:
            seconds, version = setup_time(
                target.command("stdio"),
                cwd=str(ROOT),
                env=_server_env(),
                stderr_path=target.stderr_path("setup"),
            )
        except BenchError as exc:
            raise BenchError(_with_stderr(str(exc), target.stderr_path("setup"))) from exc
        times.append(seconds)
    elapsed = time.perf_counter() - t0
    median = statistics.median(times)
    return Measurement(
        calls=len(times),
        seconds=elapsed,
        calls_per_s=1 / median,
        p50_us=median * 1e6,
        p99_us=max(times) * 1e6,
        protocol_version=version,
    )


@workload("http_seq", transport="http")
def http_seq(target: Target, cfg: Config) -> Measurement:
    """tools/call echo over Streamable HTTP, one keep-alive connection, one call at a time."""
    host, port, pid = target.http_endpoint()
    return http_client.measure(
        host, port, conns=1, duration=cfg.duration, warmup=cfg.warmup, server_pid=pid
    )


@workload("http_concurrent", transport="http")
def http_concurrent(target: Target, cfg: Config) -> Measurement:
    """tools/call echo over Streamable HTTP on ``cfg.http_conns`` sessions at once."""
    host, port, pid = target.http_endpoint()
    return http_client.measure(
        host, port, conns=cfg.http_conns, duration=cfg.duration, warmup=cfg.warmup, server_pid=pid
    )


# -- running ---------------------------------------------------------------------------


def _selected(cfg: Config) -> tuple[list[ServerSpec], list[Workload]]:
    servers = [s for s in SERVERS if cfg.servers is None or s.name in cfg.servers]
    workloads = [w for w in WORKLOADS if cfg.only is None or w.transport == cfg.only]
    return servers, workloads


def run_rounds(cfg: Config, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every round: start all servers, then workload by workload, server after server."""
    servers, workloads = _selected(cfg)
    transports = {w.transport for w in workloads}
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcpactor-bench-") as tmpdir:
        for rnd in range(cfg.rounds):
            # Rotating the start keeps any drift (thermal, page cache) off one server.
            order = servers[rnd % len(servers) :] + servers[: rnd % len(servers)]
            targets = {s.name: Target(s, cfg, tmpdir) for s in order}
            try:
                for t in targets.values():
                    t.spawn(transports)
                for t in targets.values():
                    t.ready()
                for w in workloads:
                    for spec in order:
                        target = targets[spec.name]
                        if not target.supports(w.transport):
                            continue
                        if w.servers is not None and spec.name not in w.servers:
                            continue
                        runs.append(_run_one(w, target, cfg, rnd, log))
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
        log(f"  r{rnd} {w.name:<16} {target.spec.name:<22} {m.calls_per_s:>10.0f} {w.unit}")
    except Exception as exc:
        msg = str(exc) or type(exc).__name__
        row.update(ok=False, error=msg[:1000])
        if not isinstance(exc, BenchError | OSError):
            row["traceback"] = traceback.format_exc()[-2000:]
        log(f"  r{rnd} {w.name:<16} {target.spec.name:<22} ERROR {msg.splitlines()[0][:100]}")
    row["wall_s"] = time.perf_counter() - t0
    return row


# -- summarising -----------------------------------------------------------------------


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
            "workload": wname,
            "server": sname,
            "rounds": len(rs),
            "ok_rounds": len(ok),
        }
        if ok:
            for key in (
                "calls_per_s",
                "p50_us",
                "p99_us",
                "driver_cpu_us_per_call",
                "server_cpu_us_per_call",
            ):
                row[key] = _median([r.get(key) for r in ok])
            row["protocol_version"] = ok[-1].get("protocol_version")
        else:
            row["error"] = rs[-1].get("error", "?")
        out.append(row)
    return out


def ratios(summary: list[dict[str, Any]], subject: str) -> list[dict[str, Any]]:
    """subject / every other server, per workload (throughput; and p99 where both have it)."""
    by = {(r["workload"], r["server"]): r for r in summary}
    roles = {s.name: s.role for s in SERVERS}
    out = []
    for r in summary:
        if r["server"] == subject:
            continue
        mine = by.get((r["workload"], subject))
        tput = p99 = None
        if mine and mine.get("calls_per_s") and r.get("calls_per_s"):
            tput = mine["calls_per_s"] / r["calls_per_s"]
        if mine and mine.get("p99_us") and r.get("p99_us"):
            p99 = mine["p99_us"] / r["p99_us"]
        out.append(
            {
                "workload": r["workload"],
                "versus": r["server"],
                "role": roles.get(r["server"], "?"),
                "throughput_ratio": tput,
                "p99_ratio": p99,
            }
        )
    return out


def _fmt(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def format_table(
    summary: list[dict[str, Any]], ratio_rows: list[dict[str, Any]], subject: str
) -> str:
    """The one table people read, plus the ratios under it."""
    units = {w.name: w.unit for w in WORKLOADS}
    lines = [
        f"{'workload':<16} {'server':<22} {'rate':>10} {'unit':<10} {'p50 us':>9} {'p99 us':>9} "
        f"{'drv us':>7} {'srv us':>7}  protocol",
    ]
    lines.append("-" * len(lines[0]))
    for r in summary:
        if "error" in r:
            err = r["error"].splitlines()[0][:70] if r["error"] else "?"
            lines.append(f"{r['workload']:<16} {r['server']:<22} {'ERROR':>10}  {err}")
            continue
        lines.append(
            f"{r['workload']:<16} {r['server']:<22} {_fmt(r['calls_per_s']):>10} "
            f"{units.get(r['workload'], ''):<10} {_fmt(r['p50_us']):>9} {_fmt(r['p99_us']):>9} "
            f"{_fmt(r['driver_cpu_us_per_call']):>7} {_fmt(r['server_cpu_us_per_call']):>7}  "
            f"{r.get('protocol_version') or '-'}"
        )
    lines += ["", f"{subject} / others (throughput x, p99 x; ceilings are upper bounds):"]
    if not any(q["throughput_ratio"] for q in ratio_rows):
        lines.append(f"  n/a: {subject} has no successful runs")
        return "\n".join(lines)
    for q in ratio_rows:
        tput = "n/a" if q["throughput_ratio"] is None else f"{q['throughput_ratio']:.2f}x"
        p99 = "" if q["p99_ratio"] is None else f"   p99 {q['p99_ratio']:.2f}x"
        lines.append(f"  {q['workload']:<16} vs {q['versus']:<22} ({q['role']:<7}) {tput:>8}{p99}")
    return "\n".join(lines)


def write_chart(summary: list[dict[str, Any]], path: Path, subject: str) -> None:
    """One horizontal bar panel per workload (each has its own scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = {w.name: w.unit for w in WORKLOADS}
    roles = {s.name: s.role for s in SERVERS}
    colors = {"subject": "#d62728", "peer": "#1f77b4", "ceiling": "#7f7f7f"}
    names = list(dict.fromkeys(r["workload"] for r in summary))
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.2 + 1.6 * len(names)), squeeze=False)
    for ax, wname in zip(axes[:, 0], names, strict=True):
        rows = [r for r in summary if r["workload"] == wname]
        labels = [r["server"] for r in rows]
        values = [r.get("calls_per_s") or 0 for r in rows]
        ax.barh(labels, values, color=[colors.get(roles.get(lbl, ""), "#999") for lbl in labels])
        for y, r in enumerate(rows):
            text = "error" if "error" in r else f"{r['calls_per_s']:,.0f}"
            ax.text(values[y], y, " " + text, va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{wname} ({units.get(wname, '')}, higher is better)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.margins(x=0.15)
    fig.suptitle(f"{subject} vs peers and ceilings (medians)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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

    for pkg in ("mcp", "fastmcp", "trio", "h11", "orjson", "uvicorn", "mcpactor"):
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


def run(cfg: Config, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run everything, print the table, write JSON and the chart; returns the report."""
    started = _dt.datetime.now(_dt.UTC)
    t0 = time.perf_counter()
    runs = run_rounds(cfg, log)
    summary = summarize(runs)
    ratio_rows = ratios(summary, cfg.subject)
    report = {
        "started": started.isoformat(timespec="seconds"),
        "wall_s": time.perf_counter() - t0,
        "config": {k: v for k, v in vars(cfg).items()},
        "machine": machine_info(),
        "servers": {s.name: {"role": s.role, "note": s.note} for s in SERVERS},
        "summary": summary,
        "ratios": ratio_rows,
        "runs": runs,
    }
    log("")
    log(format_table(summary, ratio_rows, cfg.subject))
    RESULTS_DIR.mkdir(exist_ok=True)
    blob = orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    (RESULTS_DIR / f"{stamp}.json").write_bytes(blob)
    (RESULTS_DIR / "latest.json").write_bytes(blob)
    try:
        write_chart(summary, RESULTS_DIR / "latest.png", cfg.subject)
    except ImportError as exc:  # the chart is a convenience; the table and JSON are the record
        log(f"chart skipped: {exc}")
    log(
        f"\nwrote {RESULTS_DIR / (stamp + '.json')}, latest.json, latest.png in {report['wall_s']:.1f}s"
    )
    return report
