"""``mcpactor run --workers N``: one port served by N processes, a dead worker
restarted, SIGTERM stopping them all; without shared state a session lives in one
worker and the others answer its requests with the spec's 404."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from scaleout_support import SERVER, free_port, stop, wait_port

pytestmark = pytest.mark.slow

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def _post(url: str, body: dict[str, object], sid: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-06-18", "connection": "close"}
    if sid is not None:
        headers["mcp-session-id"] = sid
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True, check=False).stdout
    return {int(x) for x in out.split()}


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    port = free_port()
    log = tmp_path / "supervisor.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor", "run", SERVER, "--transport", "http",
             "--port", str(port), "--workers", "2"], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_port(port, proc)
        yield proc, f"http://127.0.0.1:{port}/mcp", log
    finally:
        stop(proc, timeout=20)


def _wait_workers(pid: int, count: int, timeout: float = 15) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = _children(pid)
        if len(kids) == count:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"supervisor {pid} has {_children(pid)} workers, not {count}")


def _call(url: str, sid: str, tool: str) -> tuple[int, bytes]:
    status, _, body = _post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": tool, "arguments": {}}}, sid)
    return status, body


def test_workers_share_the_port_restart_and_stop(
    supervisor: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    proc, url, log = supervisor
    workers = _wait_workers(proc.pid, 2)
    # Sessions on fresh connections land on both workers (the kernel picks the
    # acceptor); each session's own worker answers it, the other one says 404.
    owners: dict[str, int] = {}
    saw_404 = False
    # The kernel picks which worker accepts (one shared socket), often the same one many
    # times in a row: go on until both answered, bounded.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status, headers, _ = _post(url, INIT)
        assert status == 200
        sid = headers["mcp-session-id"]
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        for _ in range(6):
            status, body = _call(url, sid, "whoami")
            if status == 200:
                owners.setdefault(sid, int(re.search(rb'"text":"(\d+)"', body).group(1)))  # type: ignore[union-attr]
            else:
                assert status == 404, body
                assert b"session" in body.lower()
                saw_404 = True
        if len(set(owners.values())) == 2 and saw_404:
            break
    assert set(owners.values()) == workers
    assert saw_404
    # kill -9 one worker: the supervisor starts another, and says so.
    victim = sorted(workers)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        now = _children(proc.pid)
        if len(now) == 2 and victim not in now:
            break
        time.sleep(0.05)
    assert victim not in _children(proc.pid) and len(_children(proc.pid)) == 2
    assert "restarting" in log.read_text()
    status, headers, _ = _post(url, INIT)
    assert status == 200
    # SIGTERM stops every worker and the supervisor, cleanly.
    kids = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    for kid in kids:
        with pytest.raises(ProcessLookupError):
            os.kill(kid, 0)


def test_workers_option_errors_are_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mcpactor", "run", SERVER, "--workers", "2"],
                         capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == ("mcpactor: --workers needs --transport http (stdio serves "
                                  "one client; use --transport http to share a port among "
                                  "worker processes)")
    out = subprocess.run([sys.executable, "-m", "mcpactor", "run", SERVER, "--transport", "http",
                          "--redis", "http://nope"], capture_output=True, text=True, timeout=30,
                         check=False)
    assert out.returncode == 2
    assert "--redis: bad Redis URL" in out.stderr and "Traceback" not in out.stderr


def _modern_call(url: str, arguments: dict[str, object],
                 retry: dict[str, object] | None = None) -> dict[str, object]:
    """One 2026-07-28 ``tools/call confirm`` POST on a fresh connection."""
    params: dict[str, object] = {
        "name": "confirm", "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}
    params.update(retry or {})
    req = urllib.request.Request(
        url, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": params}).encode(),
        {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
         "mcp-name": "confirm", "connection": "close"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()
    text = body.decode()
    if text.startswith(("event:", "id:", "data:", ":")):  # an SSE answer: its last data line
        text = [ln[5:] for ln in text.splitlines() if ln.startswith("data:")][-1]
    message = json.loads(text)
    assert "result" in message, message
    result: dict[str, object] = message["result"]
    return result


def test_workers_without_a_key_share_one_for_request_state(
    supervisor: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    # No --state-key: the supervisor draws one key for all its workers, so a 2026-07-28
    # input round started by one worker is resumed by the other (fresh connections
    # land on either).
    proc, url, _ = supervisor
    workers = _wait_workers(proc.pid, 2)
    runs: set[int] = set()
    # Which worker accepts a connection is the kernel's choice (one shared listening
    # socket): often the same one many times in a row, so try until both ran, bounded.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        answers: dict[str, object] = {}
        state: object = None
        for _round in range(3):
            retry = {} if state is None else {"inputResponses": answers, "requestState": state}
            result = _modern_call(url, {"question": "name?"}, retry)
            if result.get("resultType") != "input_required":
                break
            asks = result["inputRequests"]
            assert isinstance(asks, dict)
            for key, ask in asks.items():
                message = ask["params"]["message"]
                runs.add(int(re.search(r"worker (\d+)", message).group(1)))  # type: ignore[union-attr]
                answers = {key: {"action": "accept", "content": {"name": "ann"}}}
            state = result["requestState"]
        content = result["content"]
        assert isinstance(content, list)
        first, second, finisher = content[0]["text"].split("|")
        assert (first, second) == ("ann", "ann")
        runs.add(int(finisher))
        if runs == workers:
            break
    assert runs == workers
