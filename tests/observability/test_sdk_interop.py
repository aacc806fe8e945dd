"""Trace context across the official SDK (``mcp`` 2.3.0), which propagates it both ways:
its client injects ``traceparent`` into ``params._meta`` and its server's OpenTelemetry
middleware (on by default) extracts it. Each process exports over OTLP/HTTP to the
test's receiver; the test process's spans go to the in-memory exporter."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace

from mcpactor import connect_stdio
from mcpactor.observability import semconv

from .otel_support import collecting
from .otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_tracer = trace.get_tracer("test-agent")


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


def _env(receiver: OtlpReceiver) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50",
            "PYTHONPATH": str(ROOT)}


async def test_our_client_to_the_sdk_server(receiver: OtlpReceiver) -> None:
    with collecting() as c:
        with _tracer.start_as_current_span("agent") as agent:
            async with connect_stdio([sys.executable, str(HERE / "sdk_otel.py"), "server"],
                                     env=_env(receiver), init_timeout=20) as client:
                result = await client.call_tool("lookup", {"city": "Bergen"})
                assert result.content[0].text == "Bergen: rainy"
        ours = c.one("tools/call lookup", "CLIENT")
    receiver.wait_for(lambda r: r.named("db.lookup") and r.named("tools/call lookup"))
    (theirs,) = receiver.named("tools/call lookup", "SERVER")
    (db,) = receiver.named("db.lookup")
    assert theirs.service == "sdk-server"
    assert theirs.trace_id == f"{agent.get_span_context().trace_id:032x}" == db.trace_id
    assert theirs.parent_id == f"{ours.context.span_id:016x}"
    assert db.parent_id == theirs.span_id
    assert theirs.attributes["mcp.method.name"] == "tools/call"


def test_the_sdk_client_to_our_server(receiver: OtlpReceiver) -> None:
    ours = [sys.executable, "-m", "mcpactor", "run",
            f"{HERE / 'observed_server.py'}:server", "--otel"]
    done = subprocess.run(
        [sys.executable, str(HERE / "sdk_otel.py"), "client", *ours],
        capture_output=True, text=True, timeout=60, env={**os.environ, **_env(receiver),
                                                        "OTEL_SERVICE_NAME": "mcpactor"})
    assert done.returncode == 0, done.stderr
    trace_id, text = done.stdout.split()[0], done.stdout.split("\n")[1]
    assert text == "Bergen: sunny"
    receiver.wait_for(lambda r: r.named("tools/call lookup", "SERVER")
                      and any(s.service == "sdk-client" and s.kind == "CLIENT"
                              and "lookup" in s.name for s in r.spans))
    (server_span,) = receiver.named("tools/call lookup", "SERVER")
    (client_span,) = [s for s in receiver.spans if s.service == "sdk-client"
                      and s.kind == "CLIENT" and "lookup" in s.name]
    assert server_span.service == "mcpactor"
    assert server_span.trace_id == client_span.trace_id == trace_id
    assert server_span.parent_id == client_span.span_id
    assert server_span.attributes[semconv.TOOL_NAME] == "lookup"
    (db,) = receiver.named("db.lookup")
    assert db.parent_id == server_span.span_id
