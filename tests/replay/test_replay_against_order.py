"""``--against`` a live HTTP server keeps the recorded order between the sessions of a
whole-process trace: a session recorded after another one's answer reads what that one
wrote, however much slower the live server is. Real servers on 127.0.0.1."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import trio
from process_support import http_process
from replay_support import run_cli

from mcpactor import connect_http

MCPACTOR = [sys.executable, "-m", "mcpactor.cli"]

LEDGER = '''
import trio
from mcpactor import Server

server = Server("ledger", version="1.0")
STATE = {"balance": 100}


@server.tool
async def deposit(amount: int) -> int:
    """Add to the shared balance."""
    DELAY
    STATE["balance"] += amount
    return STATE["balance"]


@server.tool
async def peek() -> int:
    """The shared balance."""
    return STATE["balance"]
'''


def _ledger(folder: Path, name: str, delay: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(LEDGER.replace("DELAY", delay))
    return path


def _record(tmp_path: Path) -> Path:
    """Two sessions, one after the other: a deposit, then a peek at the balance."""
    trace = tmp_path / "ledger.jsonl"
    server = _ledger(tmp_path, "ledger", "pass")

    async def main(url: str) -> None:
        with trio.fail_after(30):
            async with connect_http(url) as client:
                await client.call_tool("deposit", {"amount": 5})
            async with connect_http(url) as client:
                await client.call_tool("peek", {})

    for url, _ in http_process([*MCPACTOR, "run", f"{server}:server", "--trace", str(trace)]):
        trio.run(main, url)
    return trace


def test_against_a_slower_server_keeps_the_sessions_in_recorded_order(
        tmp_path: Path) -> None:
    trace = _record(tmp_path)
    code, out, err = run_cli("replay", str(trace))
    assert code == 0 and "faithful" in out, (out, err)
    # The same code, but its deposit takes a second: the peek, recorded after the
    # deposit's answer, must still come after it (it read 105, not 100).
    slow = _ledger(tmp_path, "ledger_slow", "await trio.sleep(1.0)")
    for url, _ in http_process([*MCPACTOR, "run", f"{slow}:server"]):
        started = time.monotonic()
        code, out, err = run_cli("replay", str(trace), "--against", url)
        took = time.monotonic() - started
    assert code == 0, (out, err)
    assert ": same: " in out and "Traceback" not in err
    assert took < 20, took
