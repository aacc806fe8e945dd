"""One mcpactor client calling one mcpactor server in another process gives one
connected trace, over stdio and over Streamable HTTP: the server (``mcpactor run
--otel``) exports over OTLP/HTTP to a receiver in the test, the client's spans go to the
in-memory exporter. The server also records; the span names the trace file and the
replay command, ``mcpactor trace find`` finds the request, and the replay of it is
faithful although the recording was made with observation on."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from opentelemetry import trace

from mcpactor import connect_http, connect_stdio
from mcpactor.observability import semconv

from .otel_support import collecting
from .otlp_receiver import OtlpReceiver

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'observed_server.py'}:server"
_tracer = trace.get_tracer("test-agent")


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


def _otel_env(receiver: OtlpReceiver) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "observed-server",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }


def _check_connected(receiver: OtlpReceiver, c: object, agent: object, trace_file: Path) -> str:
    """The server's span is the child of the client's, in the agent's trace; the tool's
    own span nests under the server's; the span names the recording."""
    receiver.wait_for(lambda r: r.named("db.lookup") and r.named("tools/call lookup", "SERVER"))
    client_span = c.one("tools/call lookup", "CLIENT")  # type: ignore[attr-defined]
    (server_span,) = receiver.named("tools/call lookup", "SERVER")
    (db,) = receiver.named("db.lookup")
    trace_id = f"{agent.get_span_context().trace_id:032x}"  # type: ignore[attr-defined]
    assert server_span.trace_id == db.trace_id == trace_id
    assert server_span.parent_id == f"{client_span.context.span_id:016x}"
    assert db.parent_id == server_span.span_id
    assert server_span.service == "observed-server"
    a = server_span.attributes
    assert a[semconv.METHOD] == "tools/call" and a[semconv.TOOL_NAME] == "lookup"
    assert a[semconv.TRACE_FILE] == str(trace_file.resolve())
    assert a[semconv.REPLAY_COMMAND].startswith(f"mcpactor replay {trace_file.resolve()} ")
    assert "--request" in a[semconv.REPLAY_COMMAND]
    # The progress of the other call: events on the server's span.
    (steps,) = receiver.named("tools/call steps", "SERVER")
    assert [e[1]["mcp.progress.value"] for e in steps.events
            if e[0] == semconv.EVENT_PROGRESS] == [1.0, 2.0]
    receiver.wait_for(lambda r: semconv.SERVER_OPERATION_DURATION in r.metrics)
    return trace_id


def _find_and_replay(trace_id: str, trace_file: Path, folder: Path) -> None:
    found = subprocess.run(
        [sys.executable, "-m", "mcpactor", "trace", "find", trace_id, str(folder)],
        capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert str(trace_file.resolve()) in found.stdout or str(trace_file) in found.stdout
    assert "(tools/call)" in found.stdout and "otel_span #" in found.stdout
    lines = found.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "(tools/call)" in line)
    assert "otel_span #" in lines[at + 1] and "handler_started #" in lines[at + 1]
    command = lines[at + 2].split("replay: ", 1)[1]
    args = command.split()[1:]  # after "mcpactor"
    replayed = subprocess.run([sys.executable, "-m", "mcpactor", *args],
                              capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "faithful" in replayed.stdout
    assert "step(s)" in replayed.stdout and "emits handler_finished" in replayed.stdout


async def test_one_trace_over_stdio(receiver: OtlpReceiver, tmp_path: Path) -> None:
    trace_file = tmp_path / "server.jsonl"
    command = [sys.executable, "-m", "mcpactor", "run", SERVER, "--otel",
               "--trace", str(trace_file)]
    with collecting() as c:
        with _tracer.start_as_current_span("agent") as agent:
            async with connect_stdio(command, env=_otel_env(receiver)) as client:
                assert (await client.call_tool("lookup", {"city": "Oslo"})).content[0].text \
                    == "Oslo: sunny"
                await client.call_tool("steps", {"n": 2}, on_progress=lambda *a: None)
        trace_id = _check_connected(receiver, c, agent, trace_file)
        (server_span,) = receiver.named("tools/call lookup", "SERVER")
        assert server_span.attributes[semconv.NETWORK_TRANSPORT] == "pipe"
    _find_and_replay(trace_id, trace_file, tmp_path)


async def test_one_trace_over_http(receiver: OtlpReceiver, tmp_path: Path,
                                   http_server: object) -> None:
    folder = tmp_path / "traces"
    proc, url = http_server(SERVER, "--otel", "--trace", f"{folder}/",  # type: ignore[operator]
                            env=_otel_env(receiver))
    with collecting() as c:
        with _tracer.start_as_current_span("agent") as agent:
            async with connect_http(url) as client:
                await client.call_tool("lookup", {"city": "Oslo"})
                await client.call_tool("steps", {"n": 2}, on_progress=lambda *a: None)
                sid = client.session.id
        proc.terminate()
        proc.wait(timeout=30)
        (server_span,) = receiver.named("tools/call lookup", "SERVER") or [None]
        trace_file = folder / f"{_server_session(receiver)}.jsonl"
        trace_id = _check_connected(receiver, c, agent, trace_file)
        (server_span,) = receiver.named("tools/call lookup", "SERVER")
        assert server_span.attributes[semconv.NETWORK_TRANSPORT] == "tcp"
        assert server_span.attributes[semconv.NETWORK_PROTOCOL_NAME] == "http"
        assert sid
    _find_and_replay(trace_id, trace_file, folder)


def _server_session(receiver: OtlpReceiver) -> str:
    receiver.wait_for(lambda r: r.named("tools/call lookup", "SERVER"))
    (span,) = receiver.named("tools/call lookup", "SERVER")
    return str(span.attributes[semconv.SESSION_ID])


def test_http_headers_are_the_parent_without_meta(receiver: OtlpReceiver,
                                                   http_server: object) -> None:
    """A client that sends its context only as HTTP headers (a proxy's, an HTTP
    instrumentation's) still parents the server's span; with both, ``_meta`` is the
    parent and the headers' context a link."""
    proc, url = http_server(SERVER, "--otel", env=_otel_env(receiver))  # type: ignore[operator]
    headers = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}
    header_tp = "00-11111111111111111111111111111111-2222222222222222-01"
    meta_tp = "00-33333333333333333333333333333333-4444444444444444-01"
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)

    def post(body: dict[str, object], extra: dict[str, str]) -> http.client.HTTPResponse:
        conn.request("POST", parts.path, json.dumps(body), {**headers, **extra})
        response = conn.getresponse()
        response.read()
        return response

    init = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "raw", "version": "0"}}}, {})
    session = {"mcp-session-id": str(init.getheader("mcp-session-id")),
               "mcp-protocol-version": "2025-11-25"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    r = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "lookup", "arguments": {"city": "a"}}},
             {**session, "traceparent": header_tp})
    assert r.status == 200
    r = post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "steps", "arguments": {"n": 1},
                         "_meta": {"traceparent": meta_tp}}},
             {**session, "traceparent": header_tp})
    assert r.status == 200
    conn.close()
    proc.terminate()
    proc.wait(timeout=30)
    receiver.wait_for(lambda r: r.named("tools/call steps", "SERVER"))
    (by_header,) = receiver.named("tools/call lookup", "SERVER")
    assert (by_header.trace_id, by_header.parent_id) == ("1" * 32, "2" * 16)
    assert by_header.links == []
    (by_meta,) = receiver.named("tools/call steps", "SERVER")
    assert (by_meta.trace_id, by_meta.parent_id) == ("3" * 32, "4" * 16)
    assert by_meta.links == [("1" * 32, "2" * 16)]
