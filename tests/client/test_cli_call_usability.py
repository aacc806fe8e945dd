"""``mcpactor call`` as a user meets it (robustness campaign, item 7): options anywhere
on the line, connection failures that say why, a closed pipe that ends ``trace html``
quietly, and the server's stderr shown as the server's, when the call fails."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MCPACTOR = [sys.executable, "-m", "mcpactor"]
LOG_SERVER = shlex.join([sys.executable, str(HERE / "cli_log_server.py")])
BIG = HERE / "big_output_server.py"


def call(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPACTOR, "call", *argv], capture_output=True, text=True,
                          timeout=120)


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("mcpactor: ") and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_options_may_come_anywhere() -> None:
    target = shlex.join([sys.executable, str(BIG)])
    for argv in ([target, "--json", "lines", '{"n": 3}'],
                 [target, "lines", "--json", '{"n": 3}'],
                 ["--json", target, "lines", '{"n": 3}'],
                 [target, "lines", '{"n": 3}', "--json"]):
        done = call(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert json.loads(done.stdout)["content"][0]["text"].startswith("line 0\nline 1"), argv
    plain = call(target, "--timeout", "30", "lines", '{"n": 2}')
    assert (plain.returncode, plain.stdout) == (0, "line 0\nline 1\n"), plain.stderr
    # Still argparse's errors for what is not a positional, or one too many.
    for argv in ([target, "--bogus", "lines"], [target, "lines", "{}", "extra"]):
        done = call(*argv)
        assert done.returncode == 2 and "unrecognized arguments" in done.stderr, argv


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_failures_say_why(http_server: Callable[..., tuple[Any, str]]) -> None:
    port = _closed_port()
    refused = _one_line_error(call(f"ws://127.0.0.1:{port}/mcp"))
    assert refused.endswith(f"cannot connect to 127.0.0.1:{port}: connection refused"), refused
    _, url = http_server(f"{BIG}:server")
    ws = _one_line_error(call(url.replace("http://", "ws://")))
    assert "answered HTTP 406 instead of accepting a WebSocket" in ws, ws
    assert f"try {url}" in ws and "(406," not in ws, ws
    tls = _one_line_error(call(url.replace("http://", "https://"), "--timeout", "20"))
    assert "TLS" in tls and "plain HTTP" in tls and "use http://" in tls, tls


def test_trace_html_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[2] / "traces" / "slow_progress.jsonl"
    html = subprocess.Popen([*MCPACTOR, "trace", "html", str(trace), "-o", "/dev/stdout"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert html.stdout is not None and html.stderr is not None
    html.stdout.close()  # the reader is gone before anything is written
    err = html.stderr.read()
    assert html.wait(timeout=60) == 0
    assert err == b"", err.decode()


def test_the_servers_stderr_is_shown_as_its_own_when_the_call_fails() -> None:
    ok = call(LOG_SERVER, "fine")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "fine\n", "")
    failed = call(LOG_SERVER, "boom")
    assert failed.returncode == 1 and "kaboom" in failed.stdout
    lines = failed.stderr.splitlines()
    assert lines[0] == "mcpactor: the server's stderr:", failed.stderr
    assert all(line.startswith("  server| ") for line in lines[1:]), failed.stderr
    assert any("Traceback (most recent call last):" in line for line in lines)
    assert not any(line.startswith("Traceback") for line in lines)
    live = call(LOG_SERVER, "boom", "--server-log")
    assert live.returncode == 1
    assert live.stderr and all(line.startswith("server| ")
                               for line in live.stderr.splitlines()), live.stderr
    # A server that fails to start: its last words come before the one-line error.
    crash = shlex.join([sys.executable, "-c",
                        "import sys; print('no config file', file=sys.stderr); sys.exit(3)"])
    done = call(crash)
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == ["mcpactor: the server's stderr:",
                                           "  server| no config file"], done.stderr
    assert "exited with status 3" in done.stderr.splitlines()[-1]
    assert "ExceptionGroup" not in done.stderr
    url_only = call("http://127.0.0.1:9/mcp", "--server-log")
    assert "--server-log applies to a server started from a command line" in url_only.stderr
