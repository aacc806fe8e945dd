"""``mcpactor trace find``: a server recorded WITHOUT observation, called by a client
that propagates its context (ours, observed): the request is found by the
``traceparent`` the server received; bad ids and unknown ids are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from opentelemetry import trace

from mcpactor import connect_stdio

from .otel_support import collecting

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'observed_server.py'}:server"
_tracer = trace.get_tracer("test-agent")


def _mcpactor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpactor", *args], capture_output=True,
                          text=True, timeout=120)


async def test_found_by_the_traceparent_received(tmp_path: Path) -> None:
    trace_file = tmp_path / "plain.jsonl"
    command = [sys.executable, "-m", "mcpactor", "run", SERVER, "--trace", str(trace_file)]
    with collecting():
        with _tracer.start_as_current_span("agent") as agent:
            async with connect_stdio(command) as client:
                await client.call_tool("lookup", {"city": "Rome"})
        trace_id = f"{agent.get_span_context().trace_id:032x}"
    # Upper case and a whole traceparent work too.
    for given in (trace_id, trace_id.upper(), f"00-{trace_id}-{'1' * 16}-01"):
        found = _mcpactor("trace", "find", given, str(tmp_path))
        assert found.returncode == 0, found.stderr
        lines = found.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if "(tools/call)" in line)
        assert lines[at].startswith(f"{trace_file}: session ")
        assert "message_in #" in lines[at + 1] and "traceparent received" in lines[at + 1]
        assert "handler_started #" in lines[at + 1]
        assert lines[at + 2].startswith(f"  replay: mcpactor replay {trace_file} --request=2 ")
    replayed = _mcpactor(*lines[at + 2].split("replay: ", 1)[1].split()[1:])
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replay: faithful" in replayed.stdout


def test_unknown_and_bad_ids(tmp_path: Path) -> None:
    (tmp_path / "not-a-trace.jsonl").write_text('{"hello": 1}\n')
    missing = _mcpactor("trace", "find", "ab" * 16, str(tmp_path))
    assert missing.returncode == 1
    assert missing.stdout.strip() == f"trace {'ab' * 16}: no recorded request"
    bad = _mcpactor("trace", "find", "xyz", str(tmp_path))
    assert bad.returncode == 2
    assert bad.stderr.startswith("mcpactor: 'xyz' is not a trace id: give its 32 hex digits")
    nowhere = _mcpactor("trace", "find", "ab" * 16, str(tmp_path / "nope"))
    assert nowhere.returncode == 2
    assert nowhere.stderr.strip().endswith("nope: no such file or folder")


def test_replay_request_that_is_not_there(tmp_path: Path) -> None:
    trace_file = tmp_path / "t.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "run", SERVER, "--trace", str(trace_file)],
        input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
              b'"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}\n',
        capture_output=True, timeout=60)
    assert done.returncode == 0
    out = _mcpactor("replay", str(trace_file), "--request", "7")
    assert out.returncode == 2
    assert "no handler ran for request 7" in out.stderr


async def test_a_client_trace_is_found_by_the_traceparent_it_sent(tmp_path: Path) -> None:
    client_trace = tmp_path / "client.jsonl"
    command = [sys.executable, "-m", "mcpactor", "run", SERVER]
    with collecting():
        with _tracer.start_as_current_span("agent") as agent:
            async with connect_stdio(command, trace=client_trace) as client:
                await client.call_tool("lookup", {"city": "Lima"})
        trace_id = f"{agent.get_span_context().trace_id:032x}"
    found = _mcpactor("trace", "find", trace_id, str(client_trace))
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "(tools/call)" in line)
    assert "message_out #" in lines[at + 1] and "traceparent sent" in lines[at + 1]
    assert lines[at + 2].startswith(f"  replay: mcpactor replay {client_trace} --until ")


def test_replay_command_takes_ids_that_begin_with_a_dash(tmp_path: Path) -> None:
    """Session ids are URL-safe base64 and may begin with "-": the printed command must
    still parse (as separate arguments, argparse would take the id for an option)."""
    import shlex

    from mcpactor.cli import build_parser
    from replay.find import Found

    f = Found(tmp_path / "t.jsonl", "-Xy_z", -3, "tools/call", "otel_span", 5, None, 4)
    argv = shlex.split(f.replay_command())[1:]
    ns = build_parser().parse_args(argv)
    assert ns.session == "-Xy_z"
    assert ns.interleaving == "-3"
