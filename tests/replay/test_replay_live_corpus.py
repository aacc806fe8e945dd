"""The live race corpus (traces/live/): racy servers recorded under load over stdio,
Streamable HTTP and WebSocket, driven by raw JSON-RPC, mcpactor's client and the official
SDK's. Every trace replays faithfully ten times out of ten, to the same bytes; the races
it recorded show in it; and the fix of the bank's races, replayed on its traces, shows
which answers it changes.

Re-record with ``python traces/record_live.py`` (it replays each new trace three times).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from mcpactor.replay.trace import load_trace
from replay_support import TRACES, run_cli

LIVE = TRACES / "live"
CORPUS = sorted(LIVE.glob("*.jsonl"))
REPLAYS = 10


def _header(path: Path) -> dict[str, object]:
    header: dict[str, object] = orjson.loads(path.read_bytes().split(b"\n", 1)[0])
    return header


def test_the_corpus_covers_every_transport_server_and_client() -> None:
    assert len(CORPUS) >= 30
    names = [p.stem.split("-") for p in CORPUS]
    assert {n[0] for n in names} == {"bank", "entropy", "threads"}
    assert {n[1] for n in names} == {"stdio", "http", "ws"}
    assert {n[2] for n in names} == {"raw", "mcpactor", "sdk"}
    for path in CORPUS:
        header = _header(path)
        assert header["format_version"] == 2 and header["role"] == "server"
        assert header["transport"] == path.stem.split("-")[1]


def test_the_races_were_recorded() -> None:
    text = {p.name: p.read_text() for p in CORPUS}
    overdrawn = [n for n, t in text.items() if "OVERDRAWN" in t]
    leaked = [n for n, t in text.items() if "LEAKED" in t]
    assert len(overdrawn) >= 5 and len(leaked) >= 5
    # Over HTTP and WebSocket two clients shared the server: both sessions in one trace.
    for path in CORPUS:
        if path.stem.split("-")[1] != "stdio":
            sessions = {e.session for e in load_trace(path).events}
            assert len(sessions) >= 2, path.name


#: Replays a trace REPLAYS times in a process with the recording's string-hash seed (a
#: set of strings iterates in its order), printing each verdict and a digest of each
#: replay's output.
_REPLAY_MANY = """
import hashlib, logging, sys
from mcpactor.replay.engine import replay
from mcpactor.replay.trace import load_trace
logging.disable(logging.CRITICAL)
trace = load_trace(sys.argv[1])
for _ in range(int(sys.argv[2])):
    result = replay(trace)
    ok = result.faithful and result.reproduced == len(trace.events)
    print(ok, hashlib.sha256(result.output_bytes()).hexdigest(), result.divergence, flush=True)
"""


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_live_trace_replays_faithfully_every_time(path: Path) -> None:
    env = dict(os.environ)
    seed = _header(path).get("hash_seed")
    assert isinstance(seed, int)  # mcpactor run --trace fixes it
    env["PYTHONHASHSEED"] = str(seed)
    done = subprocess.run([sys.executable, "-c", _REPLAY_MANY, str(path), str(REPLAYS)],
                          capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr
    runs = [line.split(" ", 2) for line in done.stdout.splitlines()]
    assert len(runs) == REPLAYS
    assert all(ok == "True" for ok, _, _ in runs), runs
    assert len({digest for _, digest, _ in runs}) == 1  # the same bytes every time


def test_the_fixed_bank_replayed_on_a_racy_trace_lists_the_answers_it_changes() -> None:
    racy = next(p for p in CORPUS if p.stem.startswith("bank-http")
                and "OVERDRAWN" in p.read_text())
    fixed = TRACES / "servers" / "bank_fixed.py"
    code, out, _ = run_cli("replay", str(racy), "--server", f"{fixed}:server")
    assert code == 1, out
    assert "DIVERGED" in out and "response(s) changed" in out
    rows = [line for line in out.splitlines() if "tools/call" in line]
    assert any("OVERDRAWN" in row for row in rows)  # a recorded answer the fix changes
    # The unchanged code on the same trace: the same answers (and a faithful replay).
    code, out, _ = run_cli("replay", str(racy), "--server",
                           f"{TRACES / 'servers' / 'bank_server.py'}:server")
    assert code == 0 and "faithful (exact)" in out
