"""The standard library's other ways to read the wall clock and entropy are captured:
``time.strftime``/``ctime``/``asctime``/``localtime``/``gmtime`` called without a time
read ``time.time()`` (recorded), ``uuid.uuid1`` takes its time, clock sequence and node
from captured sources, ``os.getrandom`` is entropy like ``os.urandom``. A recording of
tools that use them replays with the same answers, byte for byte."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import trio
from replay_support import assert_replays_as_recorded

from mcpactor import connect_stdio

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'clock_forms_server.py'}:server"
MCPACTOR = [sys.executable, "-m", "mcpactor"]
#: 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch.
_UUID_EPOCH = 0x01B21DD213814000


async def _drive(trace: Path) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    async with connect_stdio([*MCPACTOR, "run", SERVER, "--trace", str(trace)]) as client:

        async def call(tool: str, args: dict[str, Any]) -> None:
            result = await client.call_tool(tool, args)
            got.append(json.loads(result.content[0].text))  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(call, "stamps", {"tag": f"loop{i}", "pause": 0.01 * i})
                nursery.start_soon(call, "stamps_in_thread", {"tag": f"thread{i}"})
    return got


def test_clock_forms_uuid1_and_getrandom_are_recorded_and_replayed(tmp_path: Path) -> None:
    trace = tmp_path / "forms.jsonl"
    got = trio.run(_drive, trace)
    assert sorted(g["tag"] for g in got) == sorted(
        [f"loop{i}" for i in range(3)] + [f"thread{i}" for i in range(3)])
    lines = trace.read_bytes().splitlines()
    recorded = [orjson.loads(x) for x in lines]
    reads = [r for r in recorded if r.get("kind") == "read"]
    walls = [r["v"] for r in reads if r["src"] == "time"]
    stamps_ns = {r["v"] for r in reads if r["src"] == "time_ns"}
    nodes = {r["v"] for r in reads if r["src"] == "uuid_node"}
    entropy = {r["v"] for r in reads if r["src"] == "urandom"}
    assert len(nodes) == 1 and len(stamps_ns) >= 6
    for g in got:
        # Each form is the recorded reading's, not a reading of its own.
        assert any(time.ctime(w) == g["ctime"] and time.asctime(time.localtime(w)) == g["asctime"]
                   and time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(w)) == g["strftime"]
                   and list(time.localtime(w)) == g["localtime"]
                   and list(time.gmtime(w)) == g["gmtime"] for w in walls), g
        made = uuid.UUID(g["uuid1"])
        assert made.version == 1 and made.node in nodes
        assert any(made.time in (ns // 100 + _UUID_EPOCH, ns // 100 + _UUID_EPOCH + 1)
                   for ns in stamps_ns), g
        assert g["getrandom"] in entropy
    # Before each replay the wall clock's seconds move on: a live reading would differ.
    assert_replays_as_recorded(trace, range(1, 8), times=2, before=lambda: time.sleep(1.1))
