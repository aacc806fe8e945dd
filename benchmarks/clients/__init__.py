"""Benchmark clients: each MCP client library driving the same minimal server.

``python benchmarks/clients/client_<name>.py (--stdio CMD... | --url URL) [--inflight N]
[--duration S] [--warmup S]`` connects, initializes, calls ``echo`` for the duration and
prints one JSON line (:func:`benchmarks.clients._loop.report`). The server is one of the
bare ceiling servers, whose cost is a few microseconds a call: what is left is the
client's.
"""
