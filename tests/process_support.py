"""Real server processes for tests in any folder (``tests/`` is on ``sys.path``)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["http_process"]


def http_process(
    argv: list[str], cwd: Path | str | None = None, stderr: IO[bytes] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``argv + ["--transport", "http", "--port", PORT]`` on a free 127.0.0.1 port;
    yields the MCP URL once it listens (listening is enough: `mcpactor run` serves no
    /health route), and the process (terminated afterwards). For a
    fixture: ``yield from http_process([...])``. ``stderr``: where its stderr goes
    (discarded by default)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*argv, "--transport", "http", "--port", str(port)],
                            cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=stderr if stderr is not None else subprocess.DEVNULL)
    try:
        for _ in range(200):
            assert proc.poll() is None, f"the server exited ({proc.returncode}): {argv}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
