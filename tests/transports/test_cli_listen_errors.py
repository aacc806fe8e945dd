"""`mcpactor run` over the network: a listener that cannot start is one line, exit 2."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = "tests/transports/stdio_server.py:server"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpactor.cli", "run", SERVER, *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False, input="",
    )


def _one_line_error(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize(
    "transport", [["--transport", "http"], ["--transport", "http", "--server", "hypercorn"],
                  ["--transport", "ws"]],
    ids=["h11", "hypercorn", "websocket"],
)
def test_a_port_in_use_names_the_port_and_the_way_out(busy_port: int, transport: list[str]) -> None:
    proc = _run(*transport, "--host", "127.0.0.1", "--port", str(busy_port))
    _one_line_error(proc, f"cannot listen on 127.0.0.1:{busy_port}: the port is in use")
    assert "--port" in proc.stderr


def test_a_host_that_is_not_this_machine_is_named() -> None:
    # 192.0.2.1 is a documentation address: binding it fails here, nothing is sent.
    proc = _run("--transport", "http", "--host", "192.0.2.1", "--port", "8123")
    _one_line_error(proc, "192.0.2.1 is not an address of this machine")


@pytest.mark.parametrize(("port", "message"), [("99999", "out of range"), ("-1", "out of range"),
                                               ("http", "not a port number")])
def test_a_port_that_is_no_port_is_refused_before_anything_starts(port: str, message: str) -> None:
    proc = _run("--transport", "http", "--port", port)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "argument --port: " in proc.stderr and message in proc.stderr


def test_a_trace_path_that_cannot_be_written_is_refused_at_start(tmp_path: Path) -> None:
    # Sessions may start long after start-up: a trace that cannot be written would
    # otherwise only show in the logs, session after session.
    a_file = tmp_path / "trace.jsonl"
    a_file.write_text("")
    folder_under_a_file = f"{a_file}/traces/"
    proc = _run("--transport", "http", "--port", "0", "--trace", folder_under_a_file)
    _one_line_error(proc, f"--trace {a_file}/traces: cannot write the trace")
    file_under_a_file = a_file / "t.jsonl"
    proc = _run("--transport", "ws", "--port", "0", "--trace", str(file_under_a_file))
    _one_line_error(proc, f"--trace {file_under_a_file}: cannot write the trace")


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_server_run_raises_the_oserror_itself(busy_port: int, transport: str) -> None:
    from mcpactor import Server

    with pytest.raises(OSError) as caught:
        Server("busy").run(transport, host="127.0.0.1", port=busy_port)
    assert not isinstance(caught.value, BaseExceptionGroup)
