"""Traces of Streamable HTTP sessions replay too, and `--against URL` drives a live one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import trio
from replay_support import RACE_SERVER, TRACES, run_cli

from mcpactor import connect_http

#: The ``http_server`` fixture (tests/conftest.py): ``start(target, *args)`` -> (process, URL).
HttpServer = Callable[..., tuple[subprocess.Popen[bytes], str]]


def test_http_session_traces_replay_and_against_url_matches(
    tmp_path: Path, http_server: HttpServer,
) -> None:
    trace_dir = tmp_path / "traces"
    proc, url = http_server(RACE_SERVER, "--trace", f"{trace_dir}/")
    try:

        async def session() -> list[str]:
            async with connect_http(url, mode="legacy") as client:
                quick = await client.call_tool("quick")
                slow = await client.call_tool("slow", {"steps": 2, "every": 0.05})
                return [quick.content[0].text, slow.content[0].text]  # type: ignore[union-attr]

        assert trio.run(session) == ["quick", "done"]
        code, out, _ = run_cli("replay", str(TRACES / "late_cancel.jsonl"), "--against", url)
        assert code == 0 and "same: 2 response(s), each as recorded" in out
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    traces = sorted(trace_dir.glob("*.jsonl"))
    assert len(traces) == 2  # one per HTTP session: ours, and the --against one
    for recorded in traces:
        code, out, err = run_cli("replay", str(recorded))
        assert code == 0, out + err
        assert "faithful" in out


def test_both_sides_of_an_http_session_replay_from_their_own_traces(
    tmp_path: Path, http_server: HttpServer,
) -> None:
    """A client recorded over Streamable HTTP against a real server process that records
    too: the server's sampling request reaches the client's handler mid-call. Each side's
    trace replays its own code against the other side's recorded messages."""
    from mcpactor.client.script import as_client_script

    sys.path.insert(0, str(Path(__file__).parent))
    import client_scripts

    server_dir = tmp_path / "server"
    client_trace = tmp_path / "client.jsonl"
    proc, url = http_server(RACE_SERVER, "--trace", f"{server_dir}/")
    script = as_client_script(client_scripts.sampling)
    assert script is not None
    try:

        async def session() -> None:
            async with connect_http(url, mode="legacy", trace=client_trace,
                                    entry_point=f"{client_scripts.__file__}:sampling",
                                    **script.connect_options()) as client:
                await script.main(client)

        trio.run(session)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    header = orjson.loads(client_trace.read_bytes().splitlines()[0])
    assert (header["role"], header["transport"]) == ("client", "http")
    kinds = [orjson.loads(line).get("kind") for line in client_trace.read_bytes().splitlines()]
    assert "handler_started" in kinds  # the client's sampling handler ran in the session
    code, out, _ = run_cli("replay", str(client_trace))
    assert code == 0, out
    (server_trace,) = sorted(server_dir.glob("*.jsonl"))
    code, out, _ = run_cli("replay", str(server_trace))
    assert code == 0, out
