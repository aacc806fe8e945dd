"""Clients that give up on a call while its answer streams (their HTTP request cancelled
mid-stream) are no error of the server's: nothing is logged as an internal error, no
traceback, and the server goes on serving (a nursery around the stream's writer wraps
the disconnect in an exception group, which once went unrecognised)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import trio
from process_support import http_process

import mcpactor

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'napping_server.py'}:server"


async def _leave_early(url: str) -> str:
    rng = random.Random(5)
    async with mcpactor.connect_http(url) as client:

        async def one() -> None:
            with trio.move_on_after(rng.uniform(0.001, 0.012)):
                await client.call_tool("nap", {"ms": rng.uniform(0, 10)},
                                       on_progress=lambda *a: None)

        for _ in range(20):
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    nursery.start_soon(one)
    async with mcpactor.connect_http(url) as client:
        result = await client.call_tool("nap", {"ms": 1})
        return str(result.content[0].text)  # type: ignore[union-attr]


def test_clients_leaving_mid_answer_log_no_internal_error(tmp_path: Path) -> None:
    log = tmp_path / "server.err"
    with open(log, "wb") as err:
        for url, proc in http_process([sys.executable, "-m", "mcpactor", "run", SERVER],
                                      stderr=err):
            answer = trio.run(_leave_early, url)
            assert answer == "x" * 2000
            assert proc.poll() is None
    text = log.read_text()
    assert "internal error" not in text and "Traceback" not in text, text[-3000:]
