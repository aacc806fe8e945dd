"""The Streamable HTTP benchmark driver: HTTP/1.1 by hand on raw sockets, one client for
every server.

Each connection is its own MCP session (initialize, ``Mcp-Session-Id`` and
``MCP-Protocol-Version`` headers on every later request), kept alive for the whole
run. Responses may be ``application/json`` or ``text/event-stream`` (the SDK's default
streams one SSE event per POST); both are accepted and checked. A single-threaded
selector loop drives C connections at once so the client's cost stays one core's
worth of Python regardless of C.

Standalone: ``python -m benchmarks.drivers.http_client --port P [--conns C]``.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import orjson

from benchmarks.drivers.pipe_client import (
    ECHO_TEXT,
    INITIALIZED_NOTIFICATION,
    BenchError,
    Measurement,
    _tree_cpu_seconds,
    check_echo_result,
    initialize_request,
    latency_stats,
)

_CALL_HEAD = b'{"jsonrpc":"2.0","id":'
_CALL_TAIL = (
    b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
    + orjson.dumps(ECHO_TEXT)
    + b"}}}"
)
#: 2026-07-28 (stateless): no session; every request carries its version, client info
#: and capabilities in ``_meta``, and the version and SEP-2243 headers.
MODERN_VERSION = "2026-07-28"
_MODERN_META = orjson.dumps({
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "mcpactor-bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
})
_MODERN_CALL_TAIL = (
    b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
    + orjson.dumps(ECHO_TEXT)
    + b'},"_meta":' + _MODERN_META + b"}}"
)
_DISCOVER = b'{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":' + \
    _MODERN_META + b"}}"


def parse_body(content_type: bytes, body: bytes) -> list[dict[str, Any]]:
    """JSON-RPC messages in a response body, JSON or SSE."""
    if not body:
        return []
    if content_type.startswith(b"text/event-stream"):
        messages = []
        for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = b"\n".join(
                line[5:].removeprefix(b" ")
                for line in event.split(b"\n")
                if line.startswith(b"data:")
            )
            # Priming events (an id, no data) exist for resumption; skip them.
            if data.strip():
                messages.append(orjson.loads(data))
        return messages
    parsed = orjson.loads(body)
    return parsed if isinstance(parsed, list) else [parsed]


class ResponseParser:
    """Incremental HTTP/1.1 response parsing: what a benchmark client needs and no more.

    Bodies framed by ``Content-Length`` or chunked; interim (1xx) responses skipped;
    anything else (a body delimited by the connection's end) is an error, since every
    session here is kept alive. After :meth:`feed` returns True, ``status``, ``headers``
    (names lower-cased) and ``body`` describe the response until :meth:`next_response`.
    """

    def __init__(self) -> None:
        self._buf = b""
        self._want = -1  # body bytes awaited (Content-Length), -1: in the head, -2: chunked
        self._chunks: list[bytes] = []
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""
        self.closing = False
        self.done = False

    def feed(self, data: bytes) -> bool:
        """Take received bytes; True once a whole response is in."""
        if self.done:
            raise BenchError("bytes after a response nobody asked for")
        buf = self._buf + data if self._buf else data
        while True:
            if self._want == -1:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    self._buf = buf
                    return False
                head, buf = buf[:end], buf[end + 4 :]
                if not self._head(head):
                    continue  # an interim response: the real one follows
            if self._want >= 0:
                if len(buf) < self._want:
                    self._buf = buf
                    return False
                self.body, buf = buf[: self._want], buf[self._want :]
                break
            # Chunked: size line, data, CRLF; a zero size ends the body (then trailers).
            line_end = buf.find(b"\r\n")
            if line_end < 0:
                self._buf = buf
                return False
            try:
                size = int(buf[:line_end].split(b";")[0], 16)
            except ValueError:
                raise BenchError(f"bad chunk size line {buf[:line_end][:40]!r}") from None
            if size == 0:
                trailer_end = buf.find(b"\r\n\r\n", line_end)
                if trailer_end < 0:
                    self._buf = buf
                    return False
                buf = buf[trailer_end + 4 :]
                self.body = b"".join(self._chunks)
                break
            start = line_end + 2
            if len(buf) < start + size + 2:
                self._buf = buf
                return False
            self._chunks.append(buf[start : start + size])
            buf = buf[start + size + 2 :]
        if buf:
            raise BenchError(f"bytes after the response: {buf[:80]!r}")
        self._buf = b""
        self.done = True
        return True

    def _head(self, head: bytes) -> bool:
        # False for an interim (1xx) response.
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise BenchError(f"not an HTTP/1.x response: {lines[0][:80]!r}")
        try:
            status = int(parts[1])
        except ValueError:
            raise BenchError(f"bad status line {lines[0][:80]!r}") from None
        if 100 <= status < 200:
            return False
        headers = []
        length = None
        chunked = False
        closing = parts[0] == b"HTTP/1.0"
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise BenchError(f"bad header line {line[:80]!r}")
            name = name.strip().lower()
            value = value.strip()
            headers.append((name, value))
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = value.lower().endswith(b"chunked")
            elif name == b"connection":
                closing = b"close" in value.lower()
        self.status, self.headers, self.closing = status, headers, closing
        self._chunks = []
        if chunked:
            self._want = -2
        elif length is not None:
            self._want = length
        elif status in (204, 304):
            self._want = 0
        else:
            raise BenchError("a response body delimited by closing the connection")
        return True

    def next_response(self) -> None:
        """Forget the completed response, ready for the next."""
        self._want = -1
        self.done = False
        self.body = b""
        self._chunks = []


class HttpSession:
    """One keep-alive connection carrying one MCP session.

    HTTP/1.1 is spoken by hand: requests are concatenated from a header block built once
    per session, and responses go through :class:`ResponseParser`. A general HTTP
    library (h11 here before) costs the driver tens of microseconds per call, paid on
    the critical path of every sequential measurement and identical for every server:
    it only narrows the ratios between them.
    """

    def __init__(self, host: str, port: int, path: str = "/mcp", timeout: float = 30.0,
                 *, stateless: bool = False) -> None:
        #: 2026-07-28: no initialize, no session id; see :meth:`discover`.
        self.stateless = stateless
        self.call_tail = _MODERN_CALL_TAIL if stateless else _CALL_TAIL
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.path = path.encode()
        self.host = f"{host}:{port}".encode()
        self.session_id: bytes | None = None
        self.protocol_version: str | None = None
        self.content_types: set[str] = set()
        self._next_id = 1
        self._head_for: tuple[bytes | None, str | None, bytes | None] | None = None
        self._head = b""
        self._parser = ResponseParser()
        self._resp_headers: list[tuple[bytes, bytes]] = []
        self.pending_id: int | None = None
        self.sent_at = 0

    def take_id(self) -> int:
        """A fresh JSON-RPC id for this session."""
        rid = self._next_id
        self._next_id += 1
        return rid

    def request_bytes(self, body: bytes, method: bytes = b"tools/call") -> bytes:
        """A POST carrying ``body`` with the session's headers (stateless: with the
        SEP-2243 ``Mcp-Method``/``Mcp-Name`` of ``method``, the echo tool's for calls)."""
        key = (self.session_id, self.protocol_version, method if self.stateless else None)
        if key != self._head_for:
            lines = [
                b"POST " + self.path + b" HTTP/1.1",
                b"host: " + self.host,
                b"content-type: application/json",
                b"accept: application/json, text/event-stream",
            ]
            if self.session_id is not None:
                lines.append(b"mcp-session-id: " + self.session_id)
            if self.protocol_version is not None:
                lines.append(b"mcp-protocol-version: " + self.protocol_version.encode())
            if self.stateless:
                lines.append(b"mcp-method: " + method)
                if method == b"tools/call":
                    lines.append(b"mcp-name: echo")
            self._head = b"\r\n".join(lines) + b"\r\ncontent-length: "
            self._head_for = key
        return b"".join((self._head, str(len(body)).encode(), b"\r\n\r\n", body))

    def feed(self, data: bytes) -> bool:
        """Give received bytes to the parser; True once the current response is complete."""
        if not data:
            raise BenchError("server closed the connection")
        return self._parser.feed(data)

    def finish(self) -> tuple[int, list[dict[str, Any]]]:
        """Status and messages of the completed response; readies the next one."""
        p = self._parser
        status, headers, body = p.status, p.headers, p.body
        self._resp_headers = headers
        ctype = next((v for k, v in headers if k == b"content-type"), b"")
        if p.closing:
            raise BenchError("server refused keep-alive")
        p.next_response()
        if status >= 400:
            raise BenchError(f"HTTP {status}: {body[:300]!r}")
        if body:
            self.content_types.add(ctype.split(b";")[0].decode())
        return status, parse_body(ctype, body)

    def roundtrip(self, body: bytes, method: bytes = b"tools/call") -> tuple[int, list[dict[str, Any]]]:
        """Blocking request/response, used for the handshake."""
        self.sock.sendall(self.request_bytes(body, method))
        while True:
            data = self.sock.recv(1 << 16)
            if self.feed(data):
                return self.finish()

    def initialize(self) -> None:
        """initialize + notifications/initialized, keeping the session id and version."""
        rid = self.take_id()
        _, messages = self.roundtrip(initialize_request(rid))
        self.session_id = next((v for k, v in self._resp_headers if k == b"mcp-session-id"), None)
        reply = next((m for m in messages if m.get("id") == rid), None)
        if reply is None or "result" not in reply:
            raise BenchError(f"initialize failed: {messages!r}"[:400])
        self.protocol_version = reply["result"].get("protocolVersion")
        status, _ = self.roundtrip(INITIALIZED_NOTIFICATION)
        if status not in (200, 202, 204):
            raise BenchError(f"notifications/initialized got HTTP {status}")

    def discover(self) -> None:
        """2026-07-28: ``server/discover``, checking that the server speaks it (the
        calls then go out with no handshake and no session)."""
        self.protocol_version = MODERN_VERSION
        _, messages = self.roundtrip(_DISCOVER, b"server/discover")
        reply = next((m for m in messages if m.get("id") == 0), None)
        offered = (reply or {}).get("result", {}).get("supportedVersions") or []
        if MODERN_VERSION not in offered:
            raise BenchError(f"the server does not speak {MODERN_VERSION}: {messages!r}"[:400])

    def open(self) -> None:
        """Ready for calls: the handshake, or the discover of the stateless revision."""
        if self.stateless:
            self.discover()
        else:
            self.initialize()

    def call(self) -> None:
        """One blocking echo call, checked."""
        rid = self.take_id()
        _, messages = self.roundtrip(_CALL_HEAD + str(rid).encode() + self.call_tail)
        reply = next((m for m in messages if m.get("id") == rid), None)
        if reply is None:
            raise BenchError(f"no response to call {rid}: {messages!r}"[:400])
        check_echo_result(reply)

    def delete(self) -> int:
        """End the session (``DELETE`` with its id); the HTTP status."""
        head = [b"DELETE " + self.path + b" HTTP/1.1", b"host: " + self.host,
                b"content-length: 0"]
        if self.session_id is not None:
            head.append(b"mcp-session-id: " + self.session_id)
        self.sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
        while True:
            if self.feed(self.sock.recv(1 << 16)):
                break
        status = self._parser.status
        self._parser.next_response()
        return status

    def close(self) -> None:
        """Drop the connection (sessions die with the server process)."""
        try:
            self.sock.close()
        except OSError:
            pass


def _run(
    sessions: list[HttpSession],
    duration: float,
    max_calls: int,
    *,
    record: bool,
    spin_ns: int = 0,
    per_session: int | None = None,
) -> tuple[int, list[int]]:
    """Keep one call in flight on every session until time runs out (or each session
    made ``per_session`` calls), then drain."""
    samples: list[int] = []
    clock = time.perf_counter_ns
    stop = clock() + int(duration * 1e9)
    sel = selectors.DefaultSelector()
    sent = done = 0
    made: dict[int, int] = {}

    def send_call(s: HttpSession) -> None:
        nonlocal sent
        made[id(s)] = made.get(id(s), 0) + 1
        rid = s.take_id()
        s.pending_id = rid
        payload = s.request_bytes(_CALL_HEAD + str(rid).encode() + s.call_tail)
        s.sent_at = clock()
        s.sock.sendall(payload)
        sent += 1

    try:
        for s in sessions:
            sel.register(s.sock, selectors.EVENT_READ, s)
            send_call(s)
        active = len(sessions)
        while active:
            events = sel.select(0)
            if not events and spin_ns:
                # Same reason as pipe_client: a blocked client wakes ~80 us late here.
                spin_stop = clock() + spin_ns
                while not events and clock() < spin_stop:
                    events = sel.select(0)
            if not events:
                events = sel.select(timeout=30)
            if not events:
                raise BenchError("no response within 30s")
            for key, _ in events:
                s = key.data
                data = s.sock.recv(1 << 16)
                if not s.feed(data):
                    continue
                t1 = clock()
                _, messages = s.finish()
                reply = next((m for m in messages if m.get("id") == s.pending_id), None)
                if reply is None:
                    raise BenchError(f"no response to call {s.pending_id}: {messages!r}"[:400])
                check_echo_result(reply)
                done += 1
                if record:
                    samples.append(t1 - s.sent_at)
                more = per_session is None or made[id(s)] < per_session
                if more and t1 < stop and sent < max_calls:
                    send_call(s)
                else:
                    sel.unregister(s.sock)
                    active -= 1
    finally:
        sel.close()
    return done, samples


def measure(
    host: str,
    port: int,
    *,
    conns: int = 1,
    duration: float = 2.0,
    warmup: float = 0.2,
    max_calls: int = 10_000_000,
    server_pid: int | None = None,
    path: str = "/mcp",
    spin_us: float = 0.0,
    stateless: bool = False,
    watch: dict[str, int] | None = None,
) -> Measurement:
    """Open ``conns`` sessions, warm up, then measure echo calls for ``duration`` seconds
    (``stateless``: 2026-07-28 requests on ``conns`` connections, no session).
    ``watch``: processes (name -> pid) whose CPU seconds over the measured window go
    in ``extra["cpu_s"]`` (several workers, a load balancer)."""
    watch = watch or {}
    sessions: list[HttpSession] = []
    try:
        for _ in range(conns):
            s = HttpSession(host, port, path, stateless=stateless)
            sessions.append(s)
            s.open()
        spin_ns = int(spin_us * 1000)
        _run(sessions, warmup, max_calls, record=False, spin_ns=spin_ns)
        cpu0 = time.process_time()
        scpu0 = None if server_pid is None else _tree_cpu_seconds(server_pid)
        watched0 = {name: _tree_cpu_seconds(pid) for name, pid in watch.items()}
        t0 = time.perf_counter()
        n, samples = _run(sessions, duration, max_calls, record=True, spin_ns=spin_ns)
        elapsed = time.perf_counter() - t0
        cpu1 = time.process_time()
        scpu1 = None if server_pid is None else _tree_cpu_seconds(server_pid)
        watched1 = {name: _tree_cpu_seconds(pid) for name, pid in watch.items()}
    except OSError as exc:
        raise BenchError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        for s in sessions:
            s.close()
    p50, p99 = latency_stats(samples)
    return Measurement(
        calls=n,
        seconds=elapsed,
        calls_per_s=n / elapsed,
        p50_us=p50,
        p99_us=p99,
        protocol_version=sessions[0].protocol_version,
        driver_cpu_us_per_call=(cpu1 - cpu0) / n * 1e6,
        server_cpu_us_per_call=None
        if scpu0 is None or scpu1 is None
        else (scpu1 - scpu0) / n * 1e6,
        extra={
            "conns": conns,
            "content_types": sorted(set().union(*(s.content_types for s in sessions))),
            **({"cpu_s": {name: (watched1[name] or 0.0) - (watched0[name] or 0.0)
                          for name in watch}} if watch else {}),
        },
    )


def sessions_burst(
    host: str, port: int, *, sessions: int, calls: int, server_pid: int | None = None,
    path: str = "/mcp", timeout: float = 60.0,
) -> Measurement:
    """``sessions`` fresh sessions (one connection each), then ``calls`` calls on each,
    all sessions at once with one call in flight each. The rate is calls/s of the call
    phase; ``extra.setup_ms`` is how long opening and initializing them all took."""
    opened: list[HttpSession] = []
    try:
        t0 = time.perf_counter()
        for _ in range(sessions):
            s = HttpSession(host, port, path)
            opened.append(s)
            s.initialize()
        setup = time.perf_counter() - t0
        cpu0 = time.process_time()
        scpu0 = None if server_pid is None else _tree_cpu_seconds(server_pid)
        t1 = time.perf_counter()
        n, samples = _run(opened, timeout, sessions * calls, record=True, per_session=calls)
        elapsed = time.perf_counter() - t1
        cpu1 = time.process_time()
        scpu1 = None if server_pid is None else _tree_cpu_seconds(server_pid)
    except OSError as exc:
        raise BenchError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        for s in opened:
            s.close()
    if n != sessions * calls:
        raise BenchError(f"only {n} of {sessions * calls} calls answered within {timeout:g}s")
    p50, p99 = latency_stats(samples)
    return Measurement(
        calls=n, seconds=elapsed, calls_per_s=n / elapsed, p50_us=p50, p99_us=p99,
        protocol_version=opened[0].protocol_version if opened else None,
        driver_cpu_us_per_call=(cpu1 - cpu0) / n * 1e6,
        server_cpu_us_per_call=None if scpu0 is None or scpu1 is None
        else (scpu1 - scpu0) / n * 1e6,
        extra={"sessions": sessions, "calls_per_session": calls, "setup_ms": setup * 1e3},
    )


def open_idle_sessions(host: str, port: int, count: int, path: str = "/mcp") -> str | None:
    """Initialize ``count`` sessions over one keep-alive connection and leave them idle
    (never closed: they live until the server does); returns the protocol version."""
    s = HttpSession(host, port, path)
    try:
        for _ in range(count):
            s.session_id = None
            s.protocol_version = None
            s.initialize()
            if s.session_id is None:
                raise BenchError("the server gave no Mcp-Session-Id (stateless?)")
        return s.protocol_version
    except OSError as exc:
        raise BenchError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        s.close()


def churn(host: str, port: int, *, sessions: int, duration: float, path: str = "/mcp",
          pause: float = 0.1) -> int:
    """Keep ``sessions`` threads opening a session, making one call and ending it
    (``DELETE``), then pausing ``pause`` seconds, for ``duration`` seconds; how many
    sessions went through. The pause keeps the server below saturation, so that what
    the probe sees is stalls rather than queueing."""
    stop = time.monotonic() + duration
    counts = [0] * sessions
    errors: list[BaseException] = []

    def loop(slot: int) -> None:
        try:
            while time.monotonic() < stop:
                s = HttpSession(host, port, path)
                try:
                    s.initialize()
                    s.call()
                    s.delete()
                finally:
                    s.close()
                counts[slot] += 1
                time.sleep(pause)
        except (OSError, BenchError) as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 60)
    if errors:
        raise BenchError(f"churn failed: {errors[0]!r}")
    return sum(counts)


def churn_latency(
    host: str, port: int, *, churners: int, duration: float, path: str = "/mcp",
) -> Measurement:
    """Worst latency of one session's back-to-back calls while ``churners`` other
    clients (a process of their own, so that the probe's timing shares no interpreter
    with them) open, use and end sessions on the same server. ``calls_per_s`` carries
    the worst latency in milliseconds."""
    import subprocess

    probe = HttpSession(host, port, path)
    proc = None
    try:
        probe.initialize()
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.drivers.http_client", "--host", host,
             "--port", str(port), "--path", path, "--churn", str(churners),
             "--duration", str(duration)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(min(0.5, duration / 4))  # the churners' sessions are under way
        samples: list[int] = []
        stop = time.monotonic() + duration * 0.75
        clock = time.perf_counter_ns
        while time.monotonic() < stop and proc.poll() is None:
            t0 = clock()
            probe.call()
            samples.append(clock() - t0)
        out, err = proc.communicate(timeout=duration + 120)
        if proc.returncode != 0:
            raise BenchError(f"churn clients failed: {err.decode(errors='replace')[-400:]}")
        churned = int(orjson.loads(out)["sessions"])
    except OSError as exc:
        raise BenchError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        probe.close()
        if proc is not None and proc.poll() is None:
            proc.kill()
    if not samples:
        raise BenchError("the probe made no call")
    worst_ms = max(samples) / 1e6
    p50, p99 = latency_stats(samples)
    return Measurement(
        calls=len(samples), seconds=duration, calls_per_s=worst_ms, p50_us=p50, p99_us=p99,
        protocol_version=probe.protocol_version,
        extra={"churned_sessions": churned, "churners": churners,
               "note": f"worst {worst_ms:.1f} ms over {len(samples)} calls; "
                       f"{churned} sessions churned"},
    )


def main(argv: Sequence[str] | None = None) -> None:
    """CLI: measure a running server and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--conns", type=int, default=1)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--spin-us", type=float, default=0.0)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--churn", type=int, default=0,
                        help="instead: this many clients opening, using and ending sessions")
    args = parser.parse_args(argv)
    if args.churn:
        n = churn(args.host, args.port, sessions=args.churn, duration=args.duration,
                  path=args.path)
        sys.stdout.write(orjson.dumps({"sessions": n}).decode() + "\n")
        return
    m = measure(
        args.host,
        args.port,
        conns=args.conns,
        duration=args.duration,
        path=args.path,
        spin_us=args.spin_us,
        server_pid=args.server_pid,
    )
    sys.stdout.write(orjson.dumps(m.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")


if __name__ == "__main__":
    main()
