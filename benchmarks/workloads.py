"""The workloads: one decorated function each, listed in the table in this order.

Adding one::

    @workload("stdio_list_tools", transport="stdio")
    def stdio_list_tools(target: Target, cfg: Config) -> Measurement:
        session = target.stdio_session()          # started and initialized for this round
        ...
        return Measurement(calls=..., seconds=..., calls_per_s=...)

``target.stdio_session()`` is a live, initialized :class:`PipeSession` shared by every
stdio workload of the round; ``target.http_endpoint(key)`` is ``(host, port, pid)`` of
a server started for the round (``instance="x"`` gives the workload a process of its
own, started with the others); ``target.command(transport)`` gives the argv to spawn
fresh processes yourself. Raise anything to turn the cell into an error row.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from benchmarks.core import (
    CLIENT_SUBJECT,
    ROOT,
    SERVERS_DIR,
    Config,
    HttpServerProcess,
    Target,
    free_port,
    server_env,
    with_stderr,
)
from benchmarks.drivers import http_client
from benchmarks.drivers.pipe_client import (
    BenchError,
    Measurement,
    PipeSession,
    setup_time,
)

WorkloadFn = Callable[[Target, Config], Measurement]


@dataclass
class Workload:
    """A named measurement over one transport."""

    name: str
    transport: str
    fn: WorkloadFn
    unit: str = "calls/s"
    servers: set[str] | None = None  # None: every server with the transport
    #: A process of its own (``"<transport>@<instance>"``), started with the round's others.
    instance: str | None = None
    lower_is_better: bool = False
    #: Whose row the others are divided by (None: the run's subject, mcpactor's server).
    subject: str | None = None
    #: Part of ``--quick`` (which must stay under a minute).
    quick: bool = True
    #: Run only when asked for (``--only TRANSPORT`` or ``--workloads NAME``): the
    #: scale-out deployments, which start their own processes for minutes.
    optional: bool = False
    #: A workload of the same server this one is compared with ("scaling": this
    #: workload's rate over the baseline's), e.g. two workers against one.
    baseline: str | None = None
    #: Measured in the first round only (a long measurement whose spread is small).
    once: bool = False

    @property
    def needs(self) -> str:
        """What :meth:`Target.spawn` must start for this workload."""
        return self.transport if self.instance is None else f"{self.transport}@{self.instance}"


WORKLOADS: list[Workload] = []


def workload(
    name: str, *, transport: str, unit: str = "calls/s", servers: set[str] | None = None,
    instance: str | None = None, lower_is_better: bool = False, subject: str | None = None,
    quick: bool = True, optional: bool = False, baseline: str | None = None,
    once: bool = False,
) -> Callable[[WorkloadFn], WorkloadFn]:
    """Register ``fn`` as a workload; the table lists workloads in registration order."""

    def register(fn: WorkloadFn) -> WorkloadFn:
        WORKLOADS.append(
            Workload(name, transport, fn, unit, servers, instance, lower_is_better, subject,
                     quick, optional, baseline, once))
        return fn

    return register


# -- stdio -----------------------------------------------------------------------------


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
                env=server_env(),
                stderr_path=target.stderr_path("setup"),
            )
        except BenchError as exc:
            raise BenchError(with_stderr(str(exc), target.stderr_path("setup"))) from exc
        times.append(seconds)
    elapsed = time.perf_counter() - t0
    median = statistics.median(times)
    return Measurement(
        calls=len(times), seconds=elapsed, calls_per_s=1 / median,
        p50_us=median * 1e6, p99_us=max(times) * 1e6, protocol_version=version,
    )


# -- Streamable HTTP -------------------------------------------------------------------


def _http(target: Target, cfg: Config, key: str, conns: int, *,
          stateless: bool = False) -> Measurement:
    host, port, pid = target.http_endpoint(key)
    return http_client.measure(
        host, port, conns=conns, duration=cfg.duration, warmup=cfg.warmup, server_pid=pid,
        stateless=stateless,
    )


@workload("http_seq", transport="http")
def http_seq(target: Target, cfg: Config) -> Measurement:
    """Streamable HTTP, JSON answers (servers' JSON mode; mcpactor's default), one
    keep-alive connection = one session, one call at a time."""
    return _http(target, cfg, "http", 1)


@workload("http_concurrent", transport="http")
def http_concurrent(target: Target, cfg: Config) -> Measurement:
    """JSON answers on ``cfg.http_conns`` sessions at once, one call in flight each."""
    return _http(target, cfg, "http", cfg.http_conns)


#: The servers that speak 2026-07-28 over HTTP (mcp 2.3.0's and fastmcp 4.1.2's on the
#: same endpoint as their handshake sessions), and the bare h11 ceiling.
_MODERN_SERVERS = {"mcpactor", "sdk_lowlevel", "sdk_decorator", "fastmcp", "bare_h11_trio"}


@workload("http_stateless_seq", transport="http", servers=_MODERN_SERVERS)
def http_stateless_seq(target: Target, cfg: Config) -> Measurement:
    """2026-07-28: stateless tools/call (``_meta`` and the version, Mcp-Method and
    Mcp-Name headers on every POST, no session), JSON answers, one keep-alive
    connection, one call at a time."""
    return _http(target, cfg, "http", 1, stateless=True)


@workload("http_stateless_concurrent", transport="http", servers=_MODERN_SERVERS)
def http_stateless_concurrent(target: Target, cfg: Config) -> Measurement:
    """2026-07-28 stateless calls on ``cfg.http_conns`` connections, one in flight each."""
    return _http(target, cfg, "http", cfg.http_conns, stateless=True)


@workload("http_sse_seq", transport="http_sse")
def http_sse_seq(target: Target, cfg: Config) -> Measurement:
    """Like http_seq with every POST answered by an SSE stream (each server's SSE mode)."""
    return _http(target, cfg, "http_sse", 1)


@workload("http_sse_concurrent", transport="http_sse")
def http_sse_concurrent(target: Target, cfg: Config) -> Measurement:
    """Like http_concurrent with SSE answers."""
    return _http(target, cfg, "http_sse", cfg.http_conns)


@workload("http_sessions", transport="http")
def http_sessions(target: Target, cfg: Config) -> Measurement:
    """``cfg.sessions_n`` new sessions (a connection each), then ``cfg.sessions_m`` calls
    on each, all sessions at once; calls/s of the call phase."""
    host, port, pid = target.http_endpoint("http")
    return http_client.sessions_burst(
        host, port, sessions=cfg.sessions_n, calls=cfg.sessions_m, server_pid=pid
    )


@workload(
    "http_churn_worst", transport="http", unit="ms worst", instance="churn",
    lower_is_better=True, servers={"mcpactor", "mcpactor_traced"}, quick=False,
)
def http_churn_worst(target: Target, cfg: Config) -> Measurement:
    """Worst call latency of one session while 30 other clients open, use and end
    sessions on the same server: traced against untraced, what recording costs the
    sessions that are not churning (its sink and its trace files opening and closing)."""
    host, port, _ = target.http_endpoint("http@churn")
    return http_client.churn_latency(host, port, churners=30, duration=max(cfg.duration, 3.0))


def _rss_bytes(pid: int) -> int:
    import psutil

    proc = psutil.Process(pid)
    return int(sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]))


@workload(
    "http_idle_memory", transport="http", unit="KB/session", instance="idle",
    lower_is_better=True,
    servers={"mcpactor", "sdk_lowlevel", "sdk_decorator", "fastmcp", "bare_h11_trio"},
)
def http_idle_memory(target: Target, cfg: Config) -> Measurement:
    """RSS growth of a fresh server per idle initialized session (``cfg.idle_sessions``
    of them, over one connection); a few sessions first warm the allocator up."""
    host, port, pid = target.http_endpoint("http@idle")
    settle = 0.1 if cfg.quick else 0.5  # background tasks, deferred frees
    version = http_client.open_idle_sessions(host, port, 20)
    time.sleep(settle / 2)
    before = _rss_bytes(pid)
    t0 = time.perf_counter()
    http_client.open_idle_sessions(host, port, cfg.idle_sessions)
    elapsed = time.perf_counter() - t0
    time.sleep(settle)
    after = _rss_bytes(pid)
    kb = (after - before) / cfg.idle_sessions / 1024
    return Measurement(
        calls=cfg.idle_sessions, seconds=elapsed, calls_per_s=kb, protocol_version=version,
        extra={"rss_before_kb": before / 1024, "rss_after_kb": after / 1024,
               "note": f"{kb:.1f} KB/session over {cfg.idle_sessions}"},
    )


# -- clients ---------------------------------------------------------------------------
# Each client library against the same minimal server (a bare ceiling server, a few
# microseconds a call): what is left is the client's cost. "drv us" is the client's CPU.
# Every measurement starts a client process (the peers import for a second or two), so
# --quick keeps only the first.


def _client(target: Target, cfg: Config, over: str, inflight: int) -> Measurement:
    server: HttpServerProcess | None = None
    try:
        if over == "stdio":
            where = ["--stdio", sys.executable, str(SERVERS_DIR / "bare_pipe_blocking.py")]
        else:
            port = free_port()
            server = HttpServerProcess(
                [sys.executable, str(SERVERS_DIR / "bare_h11_trio.py"), str(port)], port,
                target.stderr_path("client-server"))
            server.wait_ready()
            where = ["--url", f"http://127.0.0.1:{port}/mcp"]
        argv = [*target.command("client"), "--inflight", str(inflight),
                "--duration", str(cfg.duration), "--warmup", str(cfg.warmup), *where]
        with open(target.stderr_path("client"), "wb") as err:
            proc = subprocess.run(argv, cwd=ROOT, env=server_env(), stdout=subprocess.PIPE,
                                  stderr=err, timeout=cfg.duration + cfg.warmup + 90)
    finally:
        if server is not None:
            server.close()
    if proc.returncode != 0 or not proc.stdout.strip():
        raise BenchError(with_stderr(f"client exited with {proc.returncode}",
                                     target.stderr_path("client")))
    out = orjson.loads(proc.stdout.strip().splitlines()[-1])
    return Measurement(
        calls=out["calls"], seconds=out["seconds"], calls_per_s=out["calls_per_s"],
        p50_us=out["p50_us"], p99_us=out["p99_us"], protocol_version=out["protocol_version"],
        driver_cpu_us_per_call=out["client_cpu_us_per_call"],
    )


@workload("client_stdio_seq", transport="client", subject=CLIENT_SUBJECT)
def client_stdio_seq(target: Target, cfg: Config) -> Measurement:
    """The client spawns the bare pipe server and calls echo, one call in flight."""
    return _client(target, cfg, "stdio", 1)


@workload("client_stdio_conc", transport="client", subject=CLIENT_SUBJECT, quick=False)
def client_stdio_conc(target: Target, cfg: Config) -> Measurement:
    """The same with 20 calls in flight from concurrent tasks of the client."""
    return _client(target, cfg, "stdio", 20)


@workload("client_http_seq", transport="client", subject=CLIENT_SUBJECT, quick=False)
def client_http_seq(target: Target, cfg: Config) -> Measurement:
    """The client against the bare h11 server over Streamable HTTP, one call in flight."""
    return _client(target, cfg, "http", 1)


# -- trace replay ----------------------------------------------------------------------

_SLEEPY = "benchmarks/servers/sleepy_mcpactor.py:server"
_REPLAY_LINE = re.compile(r"([\d.]+) s of virtual time in ([\d.]+) s")


def _record_naps(exe: str, trace: str, cfg: Config, stderr_path: str) -> float:
    """Record a trace of ``cfg.replay_naps`` sequential naps; returns the calls' wall time."""
    session = PipeSession(
        [exe, "run", _SLEEPY, "--trace", trace], cwd=str(ROOT), env=server_env(),
        stderr_path=stderr_path,
    )
    try:
        session.initialize()
        t0 = time.perf_counter()
        with session.deadline(60):
            for i in range(1, cfg.replay_naps + 1):
                rid = 1000 + i
                session._write(orjson.dumps({
                    "jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "nap", "arguments": {"ms": cfg.replay_nap_ms}},
                }) + b"\n")
                reply = session._response(rid)
                if "result" not in reply:
                    raise BenchError(f"nap failed: {reply!r}"[:300])
        return time.perf_counter() - t0
    finally:
        session.close()


@workload("replay_speed", transport="stdio", unit="events/s", servers={"mcpactor"})
def replay_speed(target: Target, cfg: Config) -> Measurement:
    """Record a sleep-heavy stdio session, then ``mcpactor replay`` it: events/s of the
    replay, and replay time against the recorded wall time (``extra``)."""
    exe = str(Path(sys.executable).with_name("mcpactor"))
    trace = os.path.join(target.scratch(), f"naps-{time.monotonic_ns()}.jsonl")
    wall = _record_naps(exe, trace, cfg, target.stderr_path("record"))
    with open(trace, "rb") as f:
        events = sum(1 for line in f if line.strip()) - 1  # minus the header line
    t0 = time.perf_counter()
    proc = subprocess.run(
        [exe, "replay", trace], cwd=ROOT, env=server_env(), capture_output=True, text=True,
        timeout=120,
    )
    process_s = time.perf_counter() - t0
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise BenchError(f"mcpactor replay exited {proc.returncode}: {out[-300:]}")
    m = _REPLAY_LINE.search(out)
    replay_s = float(m.group(2)) if m else process_s
    return Measurement(
        calls=events, seconds=replay_s, calls_per_s=events / replay_s,
        extra={
            "recorded_wall_s": wall, "replay_s": replay_s, "process_s": process_s,
            "replay_vs_wall": replay_s / wall, "process_vs_wall": process_s / wall,
            "note": f"{events} events; replay {replay_s:.3f}s (process {process_s:.2f}s) "
                    f"vs {wall:.2f}s recorded = {replay_s / wall:.2f}x",
        },
    )


# -- scale-out (optional: ``--only scaleout``) ---------------------------------------------

from benchmarks import scaleout as _scaleout  # noqa: E402,F401 - registers its workloads
