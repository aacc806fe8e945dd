"""2026-07-28 traffic over Streamable HTTP, recorded by ``mcpactor run --transport http
--trace FILE`` (the whole-process form: every short-lived per-request session in one
file) and by the client, replays faithfully on both sides: ``input_required`` rounds
(the handler re-executed with the answers so far), listen streams (acknowledgement,
tagged notifications published from other requests' sessions, the client leaving one),
and a listen the server ends gracefully as SIGTERM stops it."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import trio
from replay_support import run_cli

from mcpactor import connect_http

HttpServer = Callable[..., tuple[subprocess.Popen[bytes], str]]
ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = f"{ROOT / 'examples' / 'everything_server.py'}:server"


def _events(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_2026_http_traffic_replays_faithfully(tmp_path: Path, http_server: HttpServer) -> None:
    from mcpactor.client.script import as_client_script

    sys.path.insert(0, str(Path(__file__).parent))
    import client_scripts

    server_trace = tmp_path / "server.jsonl"
    client_trace = tmp_path / "client.jsonl"
    proc, url = http_server(EVERYTHING, "--trace", str(server_trace))
    script = as_client_script(client_scripts.modern)
    assert script is not None
    client_scripts.ON_LISTENING.append(lambda: proc.send_signal(signal.SIGTERM))

    async def session() -> str | None:
        async with connect_http(url, trace=client_trace,
                                entry_point=f"{client_scripts.__file__}:modern",
                                **script.connect_options()) as client:
            await script.main(client)
            return client.protocol_version

    assert trio.run(session) == "2026-07-28"
    assert proc.wait(timeout=20) == 0

    events = _events(server_trace)
    assert events[0]["scope"] == "process"
    sessions = {e["session"] for e in events if e.get("kind") == "session_started"}
    assert len(sessions) > 8  # one per stateless request, all in the one file
    sent = [e["msg"] for e in events if e.get("kind") == "message_out"]
    received = [e["msg"] for e in events if e.get("kind") == "message_in"]
    assert sum(1 for m in sent if m.get("result", {}).get("resultType") == "input_required") == 2
    assert sum(1 for m in received if "inputResponses" in m.get("params", {})) == 2
    assert sum(1 for m in sent
               if m.get("method") == "notifications/subscriptions/acknowledged") == 2
    tagged = [m for m in sent if m.get("method", "").endswith(("/updated", "/list_changed"))]
    assert len(tagged) == 3
    assert all("io.modelcontextprotocol/subscriptionId" in m["params"]["_meta"] for m in tagged)
    graceful = [e for e in events if e.get("kind") == "close_requested" and e.get("graceful")]
    assert len(graceful) == 1 and "SIGTERM" in str(graceful[0]["reason"])

    for recorded in (server_trace, client_trace):
        code, out, err = run_cli("replay", str(recorded))
        assert code == 0, out + err
        assert "faithful" in out, out
