"""Scale-out workloads: worker processes behind a real load balancer (transport
``scaleout``; ``python -m benchmarks --only scaleout``, never in ``--quick``).

Each measurement starts its own deployment on 127.0.0.1 and stops it afterwards: N
worker processes on ports of their own (as N hosts would be), HAProxy balancing
requests round-robin over them (no stickiness), and, in Redis mode, a redis-server
(Debian's ``redis-server`` and ``haproxy``: ``scripts/scaleout-deps.sh install``).
The driver talks to HAProxy only.

Modes (what a worker runs, per server):

- ``stateless``: every POST served on its own, no session (mcpactor ``--stateless``;
  the official SDK's ``stateless_http=True``, its answer to running several
  processes). The driver initializes once per connection and calls with no session
  id: the deployment both can scale.
- ``modern``: 2026-07-28 requests (no session by design: ``_meta`` and headers on
  every POST), each server in its default mode, which answers them on any worker.
- ``memory``: stateful sessions in the worker's memory (mcpactor's default, the SDK's
  default); one worker only, since round-robin sends a session's requests to workers
  that do not have it.
- ``redis``: mcpactor ``--redis``: stateful sessions any worker serves (a request that
  lands on a worker other than the session's owner is relayed to the owner through
  Redis, and every message the session sends is logged to its event log first).
  ``sticky``: the same with HAProxy keeping a session's requests on the worker that
  answered its ``initialize`` (a stick table on ``Mcp-Session-Id``), so that nothing
  is relayed: what a deployment gains from a balancer that can stick.

HAProxy runs one thread (``nbthread 1``), so that on this 2-core machine it does not
take a core of its own from the workers; its CPU, Redis's and each worker's over the
measured window are in the JSON (``extra.cpu_us_per_call``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.core import HOST, Config, HttpServerProcess, Target, free_port, kill_group
from benchmarks.drivers import http_client
from benchmarks.drivers.pipe_client import BenchError, Measurement
from benchmarks.workloads import workload

__all__ = ["Deployment", "deployment"]

HAPROXY = shutil.which("haproxy") or next(
    (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.path.exists(p)), None)
REDIS = shutil.which("redis-server")

#: Arguments a mode adds to a server's ``scaleout`` command (``{redis}``: the URL).
_MODE_ARGS: dict[tuple[str, str], list[str]] = {
    ("mcpactor", "stateless"): ["--stateless"],
    ("sdk_lowlevel", "stateless"): ["--stateless"],
    ("mcpactor", "modern"): [],
    ("sdk_lowlevel", "modern"): [],
    ("mcpactor", "memory"): [],
    ("sdk_lowlevel", "memory"): [],
    ("mcpactor", "redis"): ["--redis", "{redis}"],
}
#: The servers of each mode (the SDK has no shared-state mode).
MODE_SERVERS = {mode: {s for s, m in _MODE_ARGS if m == mode} for _, mode in _MODE_ARGS}


def _need_programs(redis: bool) -> None:
    missing = [name for name, path in (("haproxy", HAPROXY), ("redis-server", REDIS))
               if path is None and (redis or name == "haproxy")]
    if missing:
        raise BenchError(f"{' and '.join(missing)} not found: run scripts/scaleout-deps.sh "
                         "install")


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection((HOST, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"{what} not listening on {HOST}:{port} after {timeout:g}s")


class Deployment:
    """Workers, HAProxy and (Redis mode) redis-server, started and stopped together."""

    def __init__(self, target: Target, mode: str, workers: int, *, sticky: bool = False,
                 supervised: bool = False) -> None:
        self.target = target
        self.mode = mode
        self.count = workers
        self.sticky = sticky
        #: One ``mcpactor run --workers N`` process (a supervisor and its N workers on
        #: one shared socket) instead of N processes on ports of their own.
        self.supervised = supervised
        self.redis: subprocess.Popen[bytes] | None = None
        self.redis_port: int | None = None
        self.workers: list[HttpServerProcess] = []
        self.haproxy: subprocess.Popen[bytes] | None = None
        self.port = free_port()
        self._files: list[Any] = []
        self.folder = os.path.join(target.scratch(), f"scaleout-{time.monotonic_ns()}")
        os.makedirs(self.folder)

    def _log(self, name: str) -> Any:
        f = open(os.path.join(self.folder, f"{name}.log"), "wb")
        self._files.append(f)
        return f

    def start(self) -> None:
        """Start everything and wait until HAProxy and every worker accept."""
        key = (self.target.spec.name, self.mode)
        if key not in _MODE_ARGS:
            raise BenchError(f"{self.target.spec.name} has no {self.mode} mode")
        _need_programs(self.mode == "redis")
        url = ""
        if self.mode == "redis":
            assert REDIS is not None
            self.redis_port = free_port()
            self.redis = subprocess.Popen(
                [REDIS, "--port", str(self.redis_port), "--bind", HOST, "--save", "",
                 "--appendonly", "no", "--dir", self.folder],
                stdout=self._log("redis"), stderr=subprocess.STDOUT, start_new_session=True)
            _wait_port(self.redis_port, self.redis, "redis-server")
            url = f"redis://{HOST}:{self.redis_port}/0"
        extra = [a.format(redis=url) for a in _MODE_ARGS[key]]
        if self.supervised:
            extra += ["--workers", str(self.count)]
        for i in range(1 if self.supervised else self.count):
            port = free_port()
            argv = self.target.command("scaleout", port) + extra
            self.workers.append(HttpServerProcess(
                argv, port, self.target.stderr_path(f"scaleout-{self.mode}-w{i}")))
        for w in self.workers:
            w.wait_ready()
        self._start_haproxy()

    def _start_haproxy(self) -> None:
        assert HAPROXY is not None
        servers = "\n".join(f"    server w{i} {HOST}:{w.port}"
                            for i, w in enumerate(self.workers))
        if self.sticky:
            # Learn each session's worker from the initialize answer's Mcp-Session-Id.
            servers = ("    stick-table type string len 64 size 200k expire 30m\n"
                       "    stick on req.hdr(mcp-session-id)\n"
                       "    stick store-response res.hdr(mcp-session-id)\n" + servers)
        config = os.path.join(self.folder, "haproxy.cfg")
        with open(config, "w") as f:
            f.write(f"""
global
    maxconn 4000
    nbthread 1
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend mcp
    bind {HOST}:{self.port}
    default_backend workers
backend workers
    balance roundrobin
    http-reuse always
{servers}
""")
        self.haproxy = subprocess.Popen([HAPROXY, "-f", config, "-db"],
                                        stdout=self._log("haproxy"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        _wait_port(self.port, self.haproxy, "haproxy")

    def pids(self) -> dict[str, int]:
        """Every process by name (``w0``, ``w1``..., ``haproxy``, ``redis``)."""
        out = {f"w{i}": w.proc.pid for i, w in enumerate(self.workers)}
        if self.haproxy is not None:
            out["haproxy"] = self.haproxy.pid
        if self.redis is not None:
            out["redis"] = self.redis.pid
        return out

    def redis_memory(self) -> int | None:
        """Redis's ``used_memory`` in bytes (Redis mode)."""
        if self.redis_port is None:
            return None
        with socket.create_connection((HOST, self.redis_port), timeout=5) as s:
            s.sendall(b"INFO memory\r\n")
            data = b""
            while b"\r\n" not in data or len(data) < int(data.split(b"\r\n", 1)[0][1:]) + 3:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        for line in data.decode(errors="replace").splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":", 1)[1])
        return None

    def stop(self) -> None:
        """Stop everything (process groups), close the logs."""
        for proc in (self.haproxy, self.redis):
            if proc is not None:
                kill_group(proc)
        for w in self.workers:
            w.close()
        for f in self._files:
            f.close()


@contextmanager
def deployment(target: Target, mode: str, workers: int, *,
               sticky: bool = False, supervised: bool = False) -> Iterator[Deployment]:
    """A started :class:`Deployment` for the block."""
    d = Deployment(target, mode, workers, sticky=sticky, supervised=supervised)
    try:
        d.start()
        yield d
    finally:
        d.stop()


def _throughput(target: Target, cfg: Config, mode: str, workers: int,
                sticky: bool = False, supervised: bool = False) -> Measurement:
    """Echo calls through HAProxy on ``cfg.http_conns`` connections (one session each,
    no session in the stateless modes), one call in flight each."""
    with deployment(target, mode, workers, sticky=sticky, supervised=supervised) as d:
        pids = d.pids()
        before = _machine_ticks()
        m = http_client.measure(HOST, d.port, conns=cfg.http_conns, duration=cfg.duration,
                                warmup=cfg.warmup, watch=pids, stateless=mode == "modern")
        after = _machine_ticks()
    cpu = m.extra.pop("cpu_s", {})
    per_call = {name: seconds / m.calls * 1e6 for name, seconds in cpu.items()}
    m.server_cpu_us_per_call = sum(v for k, v in per_call.items() if k.startswith("w"))
    m.extra["cpu_us_per_call"] = per_call
    shares = [per_call.get(f"w{i}", 0.0) for i in range(1 if supervised else workers)]
    split = ("one supervisor" if supervised else
             "/".join(f"{100 * s / (sum(shares) or 1):.0f}" for s in shares) + "%")
    lb = per_call.get("haproxy", 0.0)
    # Cores busy with this deployment and the driver over the window: how near the
    # machine's limit the rate was reached.
    cores = (sum(per_call.values()) + (m.driver_cpu_us_per_call or 0.0)) * m.calls_per_s / 1e6
    m.extra["cores_busy"] = cores
    # The whole machine over the same stretch (warm-up included): what other programs
    # took of its cores is what the deployment could not have.
    machine = None
    if before is not None and after is not None and after[1] > before[1]:
        machine = (after[0] - before[0]) / (after[1] - before[1]) * (os.cpu_count() or 1)
        m.extra["machine_cores_busy"] = machine
    m.extra["note"] = (f"{workers} worker{'s' if workers > 1 else ''}, CPU split {split}, "
                       f"haproxy {lb:.0f} us/call"
                       + (f", redis {per_call['redis']:.0f} us/call" if "redis" in per_call
                          else "") + f"; cores busy: {cores:.2f} ours"
                       + (f", {machine:.2f} machine" if machine is not None else ""))
    return m


def _machine_ticks() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine so far (Linux; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _register(name: str, mode: str, workers: int, doc: str, baseline: str | None = None,
              sticky: bool = False, supervised: bool = False) -> None:
    def fn(target: Target, cfg: Config) -> Measurement:
        return _throughput(target, cfg, mode, workers, sticky, supervised)

    fn.__doc__ = doc
    fn.__name__ = name
    servers = {"mcpactor"} if supervised else MODE_SERVERS[mode]
    workload(name, transport="scaleout", servers=servers, quick=False,
             optional=True, baseline=baseline)(fn)


_register("lb_stateless_1w", "stateless", 1,
          "Stateless mode, one worker behind HAProxy: the baseline of scaling.")
_register("lb_stateless_2w", "stateless", 2,
          "Stateless mode, two workers behind HAProxy round-robin.",
          baseline="lb_stateless_1w")
_register("lb_2026_1w", "modern", 1,
          "2026-07-28 requests (no session), one worker behind HAProxy.")
_register("lb_2026_2w", "modern", 2,
          "2026-07-28 requests, two workers behind HAProxy round-robin.",
          baseline="lb_2026_1w")
_register("lb_2026_workers2", "modern", 2,
          "2026-07-28 requests to one `mcpactor run --workers 2` behind HAProxy (the "
          "kernel spreads HAProxy's connections over the workers of one socket).",
          baseline="lb_2026_1w", supervised=True)
_register("lb_sessions_1w", "memory", 1,
          "Stateful sessions in memory, one worker behind HAProxy.")
_register("lb_redis_1w", "redis", 1,
          "Stateful sessions with --redis, one worker: the cost of the shared store alone "
          "(every message logged, nothing relayed).", baseline="lb_sessions_1w")
_register("lb_redis_2w", "redis", 2,
          "Stateful sessions with --redis, two workers round-robin: half the requests land "
          "on a worker that does not own their session and are relayed through Redis.",
          baseline="lb_redis_1w")
_register("lb_redis_2w_sticky", "redis", 2,
          "Stateful sessions with --redis, two workers, HAProxy sticking each session to "
          "the worker that answered its initialize: nothing relayed.",
          baseline="lb_redis_1w", sticky=True)


@workload("lb_idle_sessions", transport="scaleout", unit="KB/session", servers={"mcpactor"},
          lower_is_better=True, quick=False, optional=True, once=True)
def lb_idle_sessions(target: Target, cfg: Config) -> Measurement:
    """``cfg.lb_idle_sessions`` idle initialized sessions through HAProxy over two
    ``--redis`` workers (initialize and initialized may land on different workers):
    RSS growth per session of each worker and of the two together, and Redis's memory
    per session. The rate column is the workers' KB per session."""
    count = cfg.lb_idle_sessions
    with deployment(target, "redis", 2) as d:
        http_client.open_idle_sessions(HOST, d.port, 20)  # warm the allocators up
        time.sleep(0.5)
        rss0 = {name: _rss(pid) for name, pid in d.pids().items()}
        redis0 = d.redis_memory() or 0
        t0 = time.perf_counter()
        _open_in_parallel(d.port, count, threads=8)
        elapsed = time.perf_counter() - t0
        time.sleep(1.0)  # deferred frees, background tasks
        rss1 = {name: _rss(pid) for name, pid in d.pids().items()}
        redis1 = d.redis_memory() or 0
    grew = {name: (rss1[name] - rss0[name]) / 1024 for name in rss0}
    workers_kb = sum(v for k, v in grew.items() if k.startswith("w"))
    per_session = workers_kb / count
    redis_per = (redis1 - redis0) / count
    per_worker = ", ".join(f"{name} +{grew[name] / 1024:.0f} MB ({rss1[name] / 2**20:.0f} MB)"
                           for name in sorted(grew) if name.startswith("w"))
    return Measurement(
        calls=count, seconds=elapsed, calls_per_s=per_session,
        extra={"rss_before_kb": {k: v / 1024 for k, v in rss0.items()},
               "rss_after_kb": {k: v / 1024 for k, v in rss1.items()},
               "redis_used_memory_bytes": [redis0, redis1],
               "redis_bytes_per_session": redis_per,
               "sessions_per_s": count / elapsed,
               "note": f"{count} sessions in {elapsed:.1f}s; {per_worker}; "
                       f"redis {redis_per:.0f} B/session"},
    )


def _rss(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


def _open_in_parallel(port: int, count: int, threads: int) -> None:
    errors: list[BaseException] = []
    shares = [count // threads + (1 if i < count % threads else 0) for i in range(threads)]

    def run(n: int) -> None:
        try:
            http_client.open_idle_sessions(HOST, port, n)
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(n,)) for n in shares if n]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise BenchError(f"opening idle sessions failed: {errors[0]}")
