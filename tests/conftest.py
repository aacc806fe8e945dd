"""Fixtures every test folder may use."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], str]]]:
    """``start(target, *args)``: a real ``mcpactor run`` HTTP server process on a free
    127.0.0.1 port, listening when this returns. A test may stop it itself (to read
    its traces, or to send it a signal); whatever still runs is terminated afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(target: str, *args: str,
              env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor", "run", target, "--transport", "http",
             "--port", str(port), *args], stderr=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env})
        started.append(proc)
        for _ in range(200):
            assert proc.poll() is None, "the HTTP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                return proc, f"http://127.0.0.1:{port}/mcp"
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the HTTP server did not start listening")

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a server stuck in its shutdown
                proc.kill()
                proc.wait()
