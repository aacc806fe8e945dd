"""`mcpactor run --transport http` with its options, as a real process on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{ROOT / 'tests' / 'transports' / 'stdio_server.py'}:server"
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, body: dict[str, object], headers: dict[str, str] | None = None) -> tuple[int, Message, bytes]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def _serve(*flags: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpactor.cli", "run", SERVER, "--transport", "http", "--port", str(port), *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"server did not start: {proc.stderr.read() if proc.stderr else b''!r}")


def test_json_response_and_stateless_flags() -> None:
    proc, port = _serve("--json-response", "--stateless")
    try:
        status, headers, body = _post(port, INIT)
        assert status == 200
        assert headers.get("Content-Type", "").startswith("application/json")
        assert "Mcp-Session-Id" not in headers  # stateless: no session ids
        assert json.loads(body)["result"]["protocolVersion"] == "2025-06-18"
    finally:
        proc.terminate()
        proc.wait(10)


def test_default_has_sessions_and_host_checks() -> None:
    proc, port = _serve("--allow-host", "mcp.internal")
    try:
        status, headers, body = _post(port, INIT)
        assert status == 200
        assert headers.get("Mcp-Session-Id")
        assert b'"protocolVersion":"2025-06-18"' in body.replace(b" ", b"")
        status, _, _ = _post(port, INIT, {"Host": "evil.example"})
        assert 400 <= status < 500
        status, _, _ = _post(port, INIT, {"Host": f"mcp.internal:{port}"})
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(10)


def _call_add(port: int, session_id: str) -> tuple[int, Message, bytes]:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}
    return _post(port, body, {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"})


def test_server_choice_and_response_modes() -> None:
    # Default: the built-in h11 server, a quick call answered with JSON.
    for flags, content_type in (((), "application/json"),
                                (("--server", "hypercorn", "--sse-response"), "text/event-stream")):
        proc, port = _serve(*flags)
        try:
            status, headers, _ = _post(port, INIT)
            assert status == 200
            sid = headers["Mcp-Session-Id"]
            status, headers, body = _call_add(port, sid)
            assert status == 200, body
            assert headers.get("Content-Type", "").startswith(content_type), flags
            assert b'"structuredContent":{"result":5}' in body.replace(b" ", b"")
        finally:
            proc.terminate()
            proc.wait(10)


def test_connection_limit_flags() -> None:
    proc, port = _serve("--keep-alive-timeout", "0.3", "--head-timeout", "5",
                        "--body-timeout", "5", "--max-connections", "100",
                        "--max-connections-per-peer", "100", "--refusal-linger", "0.5",
                        "--max-refusals", "10")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            t0 = time.monotonic()
            assert s.recv(10) == b""  # idle: closed by the server
            assert time.monotonic() - t0 < 2
        status, _, _ = _post(port, INIT)
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_bad_connection_limit_flags_are_refused() -> None:
    for flags, message in [
        (("--keep-alive-timeout", "0"), b"--keep-alive-timeout must be a positive number"),
        (("--body-timeout", "-1"), b"--body-timeout must be a positive number"),
        (("--max-connections", "0"), b"--max-connections must be at least 1"),
        (("--max-connections-per-peer", "-1"), b"--max-connections-per-peer must be 0"),
        (("--refusal-linger", "0"), b"--refusal-linger must be a positive number"),
        (("--max-refusals", "-1"), b"--max-refusals must be 0"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "mcpactor.cli", "run", SERVER, "--transport", "http",
             "--port", "0", *flags], capture_output=True, timeout=30)
        assert done.returncode == 2, (flags, done.stderr)
        assert message in done.stderr and b"Traceback" not in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor.cli", "run", SERVER, "--max-connections", "5"],
        capture_output=True, timeout=30)
    assert done.returncode == 2 and b"need --transport http" in done.stderr, done.stderr
