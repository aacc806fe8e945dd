"""The stdio benchmark driver: one client, used unchanged against every server.

Blocking pipes and raw orjson keep the client's cost per call to a few microseconds
(the README shows its headroom against the blocking bare ceiling). Every operation
runs under a watchdog that kills the server when its deadline passes, so a server
that hangs turns into an error, never a stuck benchmark.

Standalone: ``python -m benchmarks.drivers.pipe_client [--inflight N] -- CMD ...``
prints the measurements as JSON.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

PROTOCOL_VERSION = "2025-11-25"
ECHO_TEXT = "hello, benchmark"

# Requests are built by concatenation: formatting a dict per call would put the
# client's JSON encoder on the critical path of every measurement.
_CALL_HEAD = b'{"jsonrpc":"2.0","id":'
_CALL_TAIL = (
    b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
    + orjson.dumps(ECHO_TEXT)
    + b"}}}\n"
)


class BenchError(RuntimeError):
    """The server misbehaved: exited, timed out, or answered wrongly."""


def call_request(request_id: int) -> bytes:
    """The newline-framed ``tools/call echo`` request with this id."""
    return _CALL_HEAD + str(request_id).encode() + _CALL_TAIL


def check_echo_result(msg: dict[str, Any]) -> None:
    """Raise BenchError unless ``msg`` is a successful echo of ECHO_TEXT."""
    result = msg.get("result")
    if result is None:
        raise BenchError(f"error response: {msg.get('error')!r}")
    try:
        ok = result["content"][0]["text"] == ECHO_TEXT and not result.get("isError")
    except (KeyError, IndexError, TypeError):
        ok = False
    if not ok:
        raise BenchError(f"wrong echo result: {str(result)[:300]}")


def initialize_request(request_id: int = 0) -> bytes:
    """The initialize request (compact JSON, no trailing newline)."""
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcpactor-bench", "version": "0"},
            },
        }
    )


INITIALIZED_NOTIFICATION = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = max(1, round(q / 100 * len(sorted_values) + 0.4999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass
class Measurement:
    """What one timed run produced; the harness stores these verbatim as JSON."""

    calls: int
    seconds: float
    calls_per_s: float
    p50_us: float | None = None
    p99_us: float | None = None
    protocol_version: str | None = None
    driver_cpu_us_per_call: float | None = None
    server_cpu_us_per_call: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form for JSON."""
        return asdict(self)


def _tree_cpu_seconds(pid: int) -> float | None:
    """CPU time used so far by a process and its children (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        total = 0.0
        for p in procs:
            t = p.cpu_times()
            total += t.user + t.system
        return total
    except psutil.Error:
        return None


def latency_stats(samples_ns: list[int]) -> tuple[float, float]:
    """(p50, p99) in microseconds from per-call nanosecond samples."""
    samples_ns.sort()
    return percentile(samples_ns, 50) / 1000, percentile(samples_ns, 99) / 1000


class PipeSession:
    """A server process spoken to over newline-delimited JSON-RPC on its stdio.

    The constructor only spawns; ``initialize()`` does the handshake, so a harness can
    start many servers at once and let their imports overlap before measuring any.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stderr_path: str | None = None,
        spin_us: float = 0.0,
    ) -> None:
        self.argv = list(argv)
        self.spin_ns = int(spin_us * 1000)
        self._stderr = open(stderr_path or os.devnull, "wb")
        self.spawned_at = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                cwd=cwd,
                env=env,
                bufsize=0,
                # Own process group, so close() can take down anything the server spawned.
                start_new_session=True,
            )
        except OSError:
            self._stderr.close()
            raise
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._wfd = self.proc.stdin.fileno()
        self._rfd = self.proc.stdout.fileno()
        if self.spin_ns:
            os.set_blocking(self._rfd, False)
        self._buf = b""
        self._lines: list[bytes] = []
        self._next_id = 1
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] | None = None

    # -- plumbing ---------------------------------------------------------------

    @contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Kill the server if the enclosed block outlives ``seconds``."""
        fired = threading.Event()

        def expire() -> None:
            fired.set()
            self._kill()

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except (OSError, BenchError) as exc:
            if fired.is_set():
                raise BenchError(f"timed out after {seconds:g}s") from exc
            raise
        finally:
            timer.cancel()
        if fired.is_set():
            raise BenchError(f"timed out after {seconds:g}s")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._wfd, view) :]
        except BrokenPipeError as exc:
            raise BenchError(f"server closed stdin{self._exit_note()}") from exc

    def _read_lines(self) -> list[bytes]:
        """Block until at least one complete line arrives; return all complete lines."""
        while True:
            chunk = self._read_chunk() if self.spin_ns else os.read(self._rfd, 1 << 18)
            if not chunk:
                raise BenchError(f"server closed stdout{self._exit_note()}")
            self._buf += chunk
            if b"\n" in chunk:
                *lines, self._buf = self._buf.split(b"\n")
                return [line for line in lines if line.strip()]

    def _read_chunk(self) -> bytes:
        # On this VM a blocked reader takes ~80 us to wake (haltpoll idle), which would
        # swamp the server's own cost per call; spinning briefly before blocking keeps
        # the client's wake-up out of the latency of fast servers.
        clock = time.perf_counter_ns
        stop = clock() + self.spin_ns
        while True:
            try:
                return os.read(self._rfd, 1 << 18)
            except BlockingIOError:
                if clock() >= stop:
                    break
        # The watchdog's kill closes the pipe, so this wait cannot outlive a deadline.
        select.select([self._rfd], [], [])
        return os.read(self._rfd, 1 << 18)

    def _exit_note(self) -> str:
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return ""
        return f" (exit code {code})"

    def _response(self, request_id: int) -> dict[str, Any]:
        """Read until the response to ``request_id``; other traffic is dropped."""
        while True:
            if not self._lines:
                self._lines = self._read_lines()
                self._lines.reverse()
            line = self._lines.pop()
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise BenchError(f"non-JSON line on stdout: {line[:200]!r}") from exc
            if msg.get("id") == request_id and "method" not in msg:
                return msg

    def _take_ids(self, n: int) -> int:
        first = self._next_id
        self._next_id += n
        return first

    # -- protocol ---------------------------------------------------------------

    def initialize(self, timeout: float = 30.0) -> float:
        """Handshake; returns seconds from spawn to the initialize response."""
        with self.deadline(timeout):
            rid = self._take_ids(1)
            self._write(initialize_request(rid) + b"\n")
            msg = self._response(rid)
            ready = time.perf_counter()
            if "result" not in msg:
                raise BenchError(f"initialize failed: {msg.get('error')!r}")
            self.protocol_version = msg["result"].get("protocolVersion")
            self.server_info = msg["result"].get("serverInfo")
            self._write(INITIALIZED_NOTIFICATION + b"\n")
        return ready - self.spawned_at

    def sequential(
        self, *, duration: float, max_calls: int = 1_000_000, warmup: float = 0.2
    ) -> Measurement:
        """One call in flight at a time for ``duration`` seconds, timing each call."""
        self._sequential_loop(warmup, max_calls, record=False)
        cpu0, scpu0 = time.process_time(), _tree_cpu_seconds(self.proc.pid)
        t0 = time.perf_counter()
        samples = self._sequential_loop(duration, max_calls, record=True)
        elapsed = time.perf_counter() - t0
        cpu1, scpu1 = time.process_time(), _tree_cpu_seconds(self.proc.pid)
        n = len(samples)
        p50, p99 = latency_stats(samples)
        return Measurement(
            calls=n,
            seconds=elapsed,
            calls_per_s=n / elapsed,
            p50_us=p50,
            p99_us=p99,
            protocol_version=self.protocol_version,
            driver_cpu_us_per_call=(cpu1 - cpu0) / n * 1e6,
            server_cpu_us_per_call=None
            if scpu0 is None or scpu1 is None
            else (scpu1 - scpu0) / n * 1e6,
        )

    def _sequential_loop(self, duration: float, max_calls: int, *, record: bool) -> list[int]:
        samples: list[int] = []
        clock = time.perf_counter_ns
        stop = clock() + int(duration * 1e9)
        with self.deadline(duration + 30):
            for _ in range(max_calls):
                rid = self._take_ids(1)
                t0 = clock()
                self._write(call_request(rid))
                msg = self._response(rid)
                t1 = clock()
                check_echo_result(msg)
                if record:
                    samples.append(t1 - t0)
                if t1 >= stop:
                    break
        return samples

    def pipelined(
        self,
        *,
        inflight: int = 100,
        duration: float,
        max_calls: int = 10_000_000,
        warmup: float = 0.2,
    ) -> Measurement:
        """Keep ``inflight`` calls outstanding for ``duration`` seconds."""
        self._pipelined_loop(inflight, warmup, max_calls)
        cpu0, scpu0 = time.process_time(), _tree_cpu_seconds(self.proc.pid)
        t0 = time.perf_counter()
        n = self._pipelined_loop(inflight, duration, max_calls)
        elapsed = time.perf_counter() - t0
        cpu1, scpu1 = time.process_time(), _tree_cpu_seconds(self.proc.pid)
        return Measurement(
            calls=n,
            seconds=elapsed,
            calls_per_s=n / elapsed,
            protocol_version=self.protocol_version,
            driver_cpu_us_per_call=(cpu1 - cpu0) / n * 1e6,
            server_cpu_us_per_call=None
            if scpu0 is None or scpu1 is None
            else (scpu1 - scpu0) / n * 1e6,
            extra={"inflight": inflight},
        )

    def _pipelined_loop(self, inflight: int, duration: float, max_calls: int) -> int:
        """Returns the number of calls completed; all are answered when it returns."""
        stop = time.perf_counter() + duration
        outstanding: set[int] = set()
        sent = done = 0
        loads = orjson.loads
        with self.deadline(duration + 30):
            first = self._take_ids(min(inflight, max_calls))
            batch = range(first, self._next_id)
            outstanding.update(batch)
            sent += len(batch)
            self._write(b"".join(call_request(i) for i in batch))
            while outstanding:
                lines = self._lines or self._read_lines()
                self._lines = []
                answered = 0
                for line in lines:
                    msg = loads(line)
                    rid = msg.get("id")
                    if rid in outstanding and "method" not in msg:
                        check_echo_result(msg)
                        outstanding.discard(rid)
                        answered += 1
                done += answered
                if answered and sent < max_calls and time.perf_counter() < stop:
                    k = min(answered, max_calls - sent)
                    first = self._take_ids(k)
                    batch = range(first, first + k)
                    outstanding.update(batch)
                    sent += k
                    self._write(b"".join(call_request(i) for i in batch))
        return done

    # -- teardown ---------------------------------------------------------------

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self, grace: float = 2.0) -> int | None:
        """EOF on stdin, then SIGTERM, then SIGKILL; returns the exit code."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        code: int | None = None
        try:
            code = self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                code = self.proc.wait(timeout=grace)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                self._kill()
                code = self.proc.wait(timeout=grace)
        # Children the server left behind in its group do not outlive the benchmark.
        self._kill()
        self._stderr.close()
        return code

    def __enter__(self) -> PipeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def setup_time(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    stderr_path: str | None = None,
    timeout: float = 30.0,
) -> tuple[float, str | None]:
    """Seconds from spawn to the initialize response for a fresh server, and its version."""
    with PipeSession(argv, cwd=cwd, env=env, stderr_path=stderr_path) as session:
        seconds = session.initialize(timeout)
        return seconds, session.protocol_version


def main(argv: Sequence[str] | None = None) -> None:
    """CLI: measure one server command and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--inflight", type=int, default=100)
    parser.add_argument("--spin-us", type=float, default=0.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = [c for c in args.command if c != "--"]
    if not cmd:
        parser.error("give the server command after --")
    with PipeSession(cmd, spin_us=args.spin_us) as session:
        setup = session.initialize()
        seq = session.sequential(duration=args.duration)
        pipe = session.pipelined(inflight=args.inflight, duration=args.duration)
    out = {"setup_s": setup, "sequential": seq.as_dict(), "pipelined": pipe.as_dict()}
    sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")


if __name__ == "__main__":
    main()
