"""Traces of Streamable HTTP sessions replay too, and `--against URL` drives a live one."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import trio
from replay_support import RACE_SERVER, TRACES, run_cli

from mcpactor import connect_http


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        assert proc.poll() is None, "the HTTP server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the HTTP server did not start listening")


def test_http_session_traces_replay_and_against_url_matches(tmp_path: Path) -> None:
    port = _free_port()
    trace_dir = tmp_path / "traces"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpactor.cli", "run", RACE_SERVER, "--transport", "http",
         "--port", str(port), "--trace", str(trace_dir)],
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_listening(port, proc)

        async def session() -> list[str]:
            async with connect_http(url) as client:
                quick = await client.call_tool("quick")
                slow = await client.call_tool("slow", {"steps": 2, "every": 0.05})
                return [quick.content[0].text, slow.content[0].text]  # type: ignore[union-attr]

        assert trio.run(session) == ["quick", "done"]
        code, out, _ = run_cli("replay", str(TRACES / "late_cancel.jsonl"), "--against", url)
        assert code == 0 and "all 2 outputs match" in out
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    traces = sorted(trace_dir.glob("*.jsonl"))
    assert len(traces) == 2  # one per HTTP session: ours, and the --against one
    for recorded in traces:
        code, out, err = run_cli("replay", str(recorded))
        assert code == 0, out + err
        assert "faithful" in out
