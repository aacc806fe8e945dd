"""Real processes for the scale-out tests: redis-server, haproxy, ``mcpactor run``.

Each runs on a free 127.0.0.1 port with its files under a temporary folder, is waited
for within a bound, and is stopped by the fixture that started it. Debian's
redis-server and haproxy are installed by ``scripts/scaleout-deps.sh install`` (the
Makefile's ``unit`` target runs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = str(Path(__file__).with_name("scaleout_server.py")) + ":server"
HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy")
                                       else None)
REDIS = shutil.which("redis-server")


def need_programs() -> None:
    """Fail (not skip) with the fix when the programs are missing."""
    if REDIS is None or HAPROXY is None:
        pytest.fail("redis-server and haproxy are needed: run scripts/scaleout-deps.sh install")


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 15) -> None:
    """Wait until something accepts on 127.0.0.1:port (or ``proc`` exits: a failure)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{proc.args!r} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def stop(proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL after ``timeout``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


class RedisServer:
    """One redis-server, no persistence, on a free port under ``folder``."""

    def __init__(self, folder: Path, replica_of: int | None = None) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        #: The primary's port, for a replica.
        self.replica_of = replica_of

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS is not None
        self.proc = subprocess.Popen(
            [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder), "--protected-mode", "yes",
             "--dbfilename", f"dump-{self.port}.rdb",
             *(["--replicaof", "127.0.0.1", str(self.replica_of)] if self.replica_of else [])],
            stdout=_log(self.folder, "redis"), stderr=subprocess.STDOUT)
        wait_port(self.port, self.proc)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


class RedisSentinel:
    """One Redis Sentinel (``redis-server --sentinel``) watching ``primary`` under the
    service name ``mcp``, on a free port under ``folder``."""

    def __init__(self, folder: Path, primary: RedisServer) -> None:
        self.port = free_port()
        config = folder / f"sentinel-{self.port}.conf"
        # Quick to act (a test waits for its failover): the primary counts as down
        # after half a second.
        config.write_text(f"port {self.port}\nbind 127.0.0.1\ndir {folder}\n"
                          f"sentinel monitor mcp 127.0.0.1 {primary.port} 1\n"
                          "sentinel down-after-milliseconds mcp 500\n"
                          "sentinel failover-timeout mcp 2000\n")
        assert REDIS is not None
        self.proc = subprocess.Popen([REDIS, str(config), "--sentinel"],
                                     stdout=_log(folder, "sentinel"), stderr=subprocess.STDOUT)
        wait_port(self.port, self.proc)

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.port}/mcp/0"

    def stop(self) -> None:
        stop(self.proc)


class Haproxy:
    """haproxy balancing HTTP requests round-robin (per request, no stickiness) over
    ``backends`` (127.0.0.1 ports)."""

    def __init__(self, folder: Path, backends: list[int]) -> None:
        self.port = free_port()
        config = folder / "haproxy.cfg"
        # As a deployment would: a refused connection goes to another worker
        # (redispatch), and a dead worker leaves the rotation (health checks).
        servers = "\n".join(f"    server w{i} 127.0.0.1:{port} check inter 200ms fall 1 rise 2"
                            for i, port in enumerate(backends))
        config.write_text(f"""
global
    maxconn 1000
defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
    option http-server-close
    option redispatch
    retries 3
    retry-on conn-failure empty-response
frontend mcp
    bind 127.0.0.1:{self.port}
    default_backend workers
backend workers
    balance roundrobin
{servers}
""")
        assert HAPROXY is not None
        self.proc = subprocess.Popen([HAPROXY, "-f", str(config), "-db"],
                                     stdout=_log(folder, "haproxy"), stderr=subprocess.STDOUT)
        wait_port(self.port, self.proc)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        stop(self.proc)


def _log(folder: Path, name: str) -> int:
    """A log file for a process's output (a pipe nobody reads could fill and block it)."""
    return os.open(folder / f"{name}-{time.monotonic_ns()}.log",
                   os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def start_worker(
    folder: Path, redis_url: str, *extra: str
) -> tuple[subprocess.Popen[bytes], int]:
    """One ``mcpactor run --redis`` process on a free port (one "host")."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpactor", "run", SERVER, "--transport", "http",
         "--port", str(port), "--redis", redis_url, "--worker-timeout", "1.5",
         "--allow-host", "127.0.0.1", "--max-connections-per-peer", "0", *extra],
        stdout=_log(folder, "worker"), stderr=subprocess.STDOUT)
    wait_port(port, proc)
    return proc, port


class Deployment:
    """Workers behind a balancer: the URL to use, the worker processes."""

    def __init__(self, url: str, workers: list[subprocess.Popen[bytes]]) -> None:
        self.url = url
        self.workers = workers

    def pids(self) -> set[int]:
        """The workers' process ids."""
        return {w.pid for w in self.workers}


def deploy(tmp_path: Path, *extra: str) -> Iterator[Deployment]:
    """redis-server, three workers with ``extra`` arguments, haproxy in front."""
    need_programs()
    redis = RedisServer(tmp_path)
    redis.start()
    workers: list[subprocess.Popen[bytes]] = []
    balancer: Haproxy | None = None
    try:
        ports = []
        for _ in range(3):
            proc, port = start_worker(tmp_path, redis.url, *extra)
            workers.append(proc)
            ports.append(port)
        balancer = Haproxy(tmp_path, ports)
        yield Deployment(balancer.url, workers)
    finally:
        if balancer is not None:
            balancer.stop()
        for w in workers:
            stop(w)
        redis.stop()
