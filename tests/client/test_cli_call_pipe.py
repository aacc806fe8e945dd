"""``mcpactor call ... | head``: a reader that stops reading ends the command quietly
(issue 16, item 6). It used to be reported as "cannot reach <target>: Broken pipe".

The chosen behaviour: nothing on stderr, and the exit status the call would have had
anyway (0, or 1 when the tool reported an error), not 141: the output was cut by the
reader's choice, which says nothing about the server or the call.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SERVER = HERE / "big_output_server.py"
MCPACTOR = [sys.executable, "-m", "mcpactor"]


def _piped_to_head(target: str, *argv: str) -> tuple[int, bytes, bytes]:
    """``mcpactor call TARGET ARGV | head -n 1``: (call's status, what head printed,
    what call wrote to stderr)."""
    call = subprocess.Popen([*MCPACTOR, "call", target, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert call.stdout is not None and call.stderr is not None
    head = subprocess.run(["head", "-n", "1"], stdin=call.stdout, capture_output=True,
                          timeout=60)
    call.stdout.close()  # head has exited: the pipe's read end is closed
    err = call.stderr.read()
    return call.wait(timeout=60), head.stdout, err


def _closed_stdout(target: str, *argv: str) -> tuple[int, bytes]:
    """``mcpactor call`` with its stdout closed by the reader before it writes."""
    call = subprocess.Popen([*MCPACTOR, "call", target, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert call.stdout is not None and call.stderr is not None
    call.stdout.close()
    err = call.stderr.read()
    return call.wait(timeout=60), err


def _targets(http_server: Callable[..., tuple[Any, str]]) -> list[str]:
    _, url = http_server(f"{SERVER}:server")
    return [f"{sys.executable} {SERVER}", url]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_head_closing_the_pipe_ends_call_quietly(
    http_server: Callable[..., tuple[Any, str]], transport: str,
) -> None:
    stdio, url = _targets(http_server)
    target = stdio if transport == "stdio" else url
    status, first, err = _piped_to_head(target, "lines", '{"n": 200000}')
    assert first == b"line 0\n"
    assert err == b"", err.decode()
    assert status == 0
    status, err = _closed_stdout(target)  # the tool list, to a closed pipe
    assert err == b"", err.decode()
    assert status == 0
    status, err = _closed_stdout(target, "lines", '{"n": 10}', "--json")
    assert (status, err) == (0, b"")
    # The status still says the tool reported an error.
    status, first, err = _piped_to_head(target, "fail", '{"n": 200000}')
    assert first == b"error line 0\n", first
    assert (status, err) == (1, b"")


def test_any_command_ends_quietly_when_its_reader_has_gone() -> None:
    trace = next((HERE.parent.parent / "traces").glob("*.jsonl"))
    show = subprocess.Popen([*MCPACTOR, "trace", "show", str(trace)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert show.stdout is not None and show.stderr is not None
    show.stdout.close()
    err = show.stderr.read()
    assert (show.wait(timeout=60), err) == (0, b"")
