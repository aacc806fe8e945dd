"""The official SDK (``mcp`` 2.3.0) with OpenTelemetry's SDK exporting over OTLP/HTTP to
the test's receiver (``OTEL_EXPORTER_OTLP_ENDPOINT``): ``server`` runs an SDK server over
stdio (its OpenTelemetry middleware is on by default); ``client COMMAND...`` runs an SDK
client against a server command, calls ``lookup`` inside a span of its own and prints
that span's trace id."""

from __future__ import annotations

import atexit
import os
import sys

import anyio
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def _configure(service: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)


def serve() -> None:
    from mcp.server.mcpserver import MCPServer

    _configure("sdk-server")
    server = MCPServer("sdk-otel-server", version="1.0.0")
    tracer = trace.get_tracer("sdk-server-code")

    @server.tool()
    def lookup(city: str) -> str:
        """A tool whose code makes a span of its own."""
        with tracer.start_as_current_span("db.lookup"):
            return f"{city}: rainy"

    server.run("stdio")


async def client(command: list[str]) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    _configure("sdk-client")
    tracer = trace.get_tracer("sdk-agent")
    # The whole environment: the server exports to the same receiver.
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=10) as session:
            await session.initialize()
            with tracer.start_as_current_span("sdk-agent") as agent:
                result = await session.call_tool("lookup", {"city": "Bergen"})
                print(f"{agent.get_span_context().trace_id:032x}", flush=True)
                print(result.content[0].text, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        anyio.run(client, sys.argv[2:])
