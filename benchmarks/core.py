"""What the harness runs: configuration, the servers under test and their processes.

A server is a :class:`ServerSpec` with one argv template per transport (``stdio``,
``http``, ``http_sse``); placeholders: ``{python}`` the bench venv's interpreter,
``{mcpactor}`` its console script, ``{servers}`` this folder's ``servers/``, ``{port}``
a free loopback port, ``{tmp}`` a scratch folder of the run. A :class:`Target` is one
server within one round: it starts the processes the round's workloads need, all at
once so their imports overlap, and kills them at the round's end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.drivers.pipe_client import BenchError, PipeSession

ROOT = Path(__file__).resolve().parent.parent
SERVERS_DIR = Path(__file__).resolve().parent / "servers"
CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
HOST = "127.0.0.1"
SUBJECT = "mcpactor"
#: The subject of the client workloads (transport ``client``): mcpactor's client.
CLIENT_SUBJECT = "mcpactor_client"


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
    #: http_sessions: N sessions at once, M calls each.
    sessions_n: int = 20
    sessions_m: int = 50
    #: http_idle_memory: idle initialized sessions opened on a fresh server.
    idle_sessions: int = 500
    #: replay_speed: naps in the recorded trace, and how long each sleeps (ms). The
    #: target is about sleep-heavy sessions: most of the recorded wall time is sleeping.
    replay_naps: int = 30
    replay_nap_ms: int = 100
    #: lb_idle_sessions: idle sessions opened through the balancer over two workers.
    lb_idle_sessions: int = 10_000
    #: Run the optional workloads too (set by ``--only`` or ``--workloads``).
    optional: bool = False
    quick: bool = False
    only: str | None = None
    servers: list[str] | None = None
    subject: str = SUBJECT

    @classmethod
    def quick_mode(cls) -> Config:
        """Settings under which the whole suite takes less than a minute."""
        return cls(
            rounds=1, duration=0.3, warmup=0.05, setup_samples=1, quick=True,
            sessions_n=10, sessions_m=20, idle_sessions=100, replay_naps=10,
        )


@dataclass
class ServerSpec:
    """A server under test: its role and how to launch it per transport."""

    name: str
    #: "subject" | "variant" (the subject in another setting) | "peer" | "ceiling"; the
    #: clients (transport ``client``) are "subject" and "peer" of their own workloads.
    role: str
    commands: dict[str, list[str]]
    note: str = ""
    #: Only these workloads run against it (None: all of its transports').
    workloads: set[str] | None = None


_ECHO = "benchmarks/servers/echo_mcpactor.py:server"
_HTTP = ["--transport", "http", "--host", HOST, "--port", "{port}"]

SERVERS: list[ServerSpec] = [
    ServerSpec(
        "mcpactor",
        "subject",
        {
            "stdio": ["{mcpactor}", "run", _ECHO],
            "http": ["{mcpactor}", "run", _ECHO, *_HTTP],
            "http_sse": ["{mcpactor}", "run", _ECHO, *_HTTP, "--sse-response"],
            # One worker of a deployment behind a balancer (every client has its
            # address, hence no per-peer cap); benchmarks/scaleout.py adds the mode.
            "scaleout": ["{mcpactor}", "run", _ECHO, *_HTTP, "--max-connections-per-peer",
                         "0"],
        },
        "mcpactor run; HTTP: built-in h11 server, JSON unless a handler streams",
    ),
    ServerSpec(
        "mcpactor_traced",
        "variant",
        {
            "stdio": ["{mcpactor}", "run", _ECHO, "--trace", "{tmp}/stdio-trace.jsonl"],
            "http": ["{mcpactor}", "run", _ECHO, *_HTTP, "--trace", "{tmp}/http-traces"],
        },
        "mcpactor run --trace: recording every event to JSONL",
        workloads={"stdio_seq", "stdio_pipelined", "http_seq", "http_concurrent",
                   "http_churn_worst"},
    ),
    ServerSpec(
        "mcpactor_otel",
        "variant",
        {
            "stdio": ["{mcpactor}", "run", "benchmarks/servers/echo_otel.py:server", "--otel"],
            "http": ["{mcpactor}", "run", "benchmarks/servers/echo_otel.py:server", *_HTTP,
                     "--otel"],
        },
        "mcpactor run --otel: OpenTelemetry spans and metrics (the SDK, batch processor, "
        "exporting nowhere)",
        workloads={"stdio_seq", "stdio_pipelined", "http_seq", "http_concurrent"},
    ),
    ServerSpec(
        "sdk_lowlevel",
        "peer",
        {
            "stdio": ["{python}", "{servers}/echo_sdk_lowlevel.py"],
            "http": ["{python}", "{servers}/echo_sdk_lowlevel.py", "http", "{port}"],
            "http_sse": ["{python}", "{servers}/echo_sdk_lowlevel.py", "http", "{port}", "--sse"],
            "scaleout": ["{python}", "{servers}/echo_sdk_lowlevel.py", "http", "{port}"],
        },
        "mcp 2.3.0 low-level Server; HTTP: uvicorn",
    ),
    ServerSpec(
        "sdk_decorator",
        "peer",
        {
            "stdio": ["{python}", "{servers}/echo_sdk_decorator.py"],
            "http": ["{python}", "{servers}/echo_sdk_decorator.py", "http", "{port}"],
            "http_sse": ["{python}", "{servers}/echo_sdk_decorator.py", "http", "{port}", "--sse"],
        },
        "mcp 2.3.0 MCPServer (ex-FastMCP); HTTP: uvicorn",
    ),
    ServerSpec(
        "fastmcp",
        "peer",
        {
            "stdio": ["{python}", "{servers}/echo_fastmcp.py"],
            "http": ["{python}", "{servers}/echo_fastmcp.py", "http", "{port}"],
            "http_sse": ["{python}", "{servers}/echo_fastmcp.py", "http", "{port}", "--sse"],
        },
        "fastmcp 4.1.2; HTTP: uvicorn",
    ),
    ServerSpec(
        CLIENT_SUBJECT,
        "subject",
        {"client": ["{python}", "{clients}/client_mcpactor.py"]},
        "mcpactor.connect_stdio / connect_http",
    ),
    ServerSpec(
        "sdk_client",
        "peer",
        {"client": ["{python}", "{clients}/client_sdk.py"]},
        "mcp 2.3.0 ClientSession (its 2025-11-25 handshake)",
    ),
    ServerSpec(
        "fastmcp_client",
        "peer",
        {"client": ["{python}", "{clients}/client_fastmcp.py"]},
        "fastmcp 4.1.2 Client",
    ),
    ServerSpec(
        "bare_pipe_blocking",
        "ceiling",
        {"stdio": ["{python}", "{servers}/bare_pipe_blocking.py"]},
        "os.read/os.write loop",
    ),
    ServerSpec(
        "bare_pipe_trio",
        "ceiling",
        {"stdio": ["{python}", "{servers}/bare_pipe_trio.py", "loop"]},
        "trio, one loop",
    ),
    ServerSpec(
        "bare_pipe_trio_tasks",
        "ceiling",
        {"stdio": ["{python}", "{servers}/bare_pipe_trio.py", "tasks"]},
        "trio, task per request + batching writer",
    ),
    ServerSpec(
        "bare_h11_trio",
        "ceiling",
        {"http": ["{python}", "{servers}/bare_h11_trio.py", "{port}"]},
        "h11 on trio, JSON answers",
    ),
    ServerSpec(
        "hypercorn_trivial",
        "ceiling",
        {"http": ["{python}", "{servers}/hypercorn_trivial.py", "{port}"]},
        "a trivial ASGI app on hypercorn's trio worker (the floor of serving through it)",
        workloads={"http_seq", "http_concurrent"},
    ),
]


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_env() -> dict[str, str]:
    """The servers' environment: the harness's, minus console noise."""
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


def stderr_tail(path: str, limit: int = 800) -> str:
    """The end of a process's stderr file."""
    try:
        text = Path(path).read_text(errors="replace").strip()
    except OSError:
        return ""
    return text[-limit:]


def with_stderr(message: str, path: str) -> str:
    """First line: the message and the stderr's last line (usually the exception); then the tail."""
    tail = stderr_tail(path)
    if not tail:
        return message
    return f"{message}: {tail.splitlines()[-1]}\n{tail}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
            env=server_env(),
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Poll until the port accepts connections or the process dies."""
        stop = time.monotonic() + timeout
        while time.monotonic() < stop:
            if self.proc.poll() is not None:
                raise BenchError(
                    with_stderr(f"server exited with {self.proc.returncode}", self.stderr_path)
                )
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise BenchError(f"server not listening after {timeout:g}s")

    def close(self) -> None:
        """Stop the process group."""
        kill_group(self.proc)
        self._stderr.close()


@dataclass
class Target:
    """One server within one round: lazily started fixtures, torn down at round end."""

    spec: ServerSpec
    cfg: Config
    tmpdir: str
    _stdio: PipeSession | BaseException | None = None
    _http: dict[str, HttpServerProcess | BaseException] = field(default_factory=dict)

    def supports(self, transport: str) -> bool:
        """Whether the server has a command for this transport."""
        return transport in self.spec.commands

    def scratch(self) -> str:
        """A folder of this server's own for the run (traces, ...)."""
        path = os.path.join(self.tmpdir, self.spec.name)
        os.makedirs(path, exist_ok=True)
        return path

    def command(self, transport: str, port: int = 0) -> list[str]:
        """Argv that launches this server on ``transport``."""
        values = {
            "python": sys.executable,
            "mcpactor": str(Path(sys.executable).with_name("mcpactor")),
            "servers": str(SERVERS_DIR),
            "clients": str(CLIENTS_DIR),
            "port": str(port),
            "tmp": self.scratch(),
        }
        return [arg.format(**values) for arg in self.spec.commands[transport]]

    def stderr_path(self, what: str) -> str:
        """A file for a process's stderr, kept until the run ends for error reports."""
        return os.path.join(self.tmpdir, f"{self.spec.name}.{what}.stderr")

    def spawn(self, needs: set[str]) -> None:
        """Start the round's processes without waiting, so their imports overlap.

        ``needs``: ``"stdio"`` and HTTP instance names ``"<transport>"`` or
        ``"<transport>@<instance>"`` (a separate process, e.g. a fresh one to measure).
        """
        if "stdio" in needs and self.supports("stdio") and self._stdio is None:
            try:
                self._stdio = PipeSession(
                    self.command("stdio"),
                    cwd=str(ROOT),
                    env=server_env(),
                    stderr_path=self.stderr_path("stdio"),
                    spin_us=self.cfg.spin_us,
                )
            except Exception as exc:
                self._stdio = exc
        # Client and scale-out workloads start their own processes (a client and its
        # minimal server; a deployment behind a balancer).
        for key in sorted(needs - {"stdio", "client", "scaleout"}):
            transport = key.split("@", 1)[0]
            if not self.supports(transport) or key in self._http:
                continue
            try:
                port = free_port()
                self._http[key] = HttpServerProcess(
                    self.command(transport, port), port, self.stderr_path(key)
                )
            except Exception as exc:
                self._http[key] = exc

    def ready(self) -> None:
        """Finish starting what spawn() began; failures are kept and re-raised on use."""
        if isinstance(self._stdio, PipeSession):
            try:
                self._stdio.initialize()
            except Exception as exc:
                self._stdio.close()
                self._stdio = BenchError(with_stderr(str(exc), self.stderr_path("stdio")))
        for key, proc in list(self._http.items()):
            if isinstance(proc, HttpServerProcess):
                try:
                    proc.wait_ready()
                except Exception as exc:
                    proc.close()
                    self._http[key] = exc

    def stdio_session(self) -> PipeSession:
        """The round's initialized stdio session."""
        if self._stdio is None:
            self.spawn({"stdio"})
            self.ready()
        if isinstance(self._stdio, BaseException):
            raise self._stdio
        assert self._stdio is not None
        return self._stdio

    def http_endpoint(self, key: str = "http") -> tuple[str, int, int]:
        """(host, port, pid) of the round's HTTP server for ``key`` (see :meth:`spawn`)."""
        if key not in self._http:
            self.spawn({key})
            self.ready()
        proc = self._http[key]
        if isinstance(proc, BaseException):
            raise proc
        return HOST, proc.port, proc.proc.pid

    def close(self) -> None:
        """Stop everything this target started."""
        if isinstance(self._stdio, PipeSession):
            self._stdio.close()
        for proc in self._http.values():
            if isinstance(proc, HttpServerProcess):
                proc.close()
        self._stdio = None
        self._http = {}
