"""``mcpactor run --transport http --metrics``: a real server process scraped over HTTP,
its text parsed with prometheus-client's own parser."""

from __future__ import annotations

import http.client
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import trio
from prometheus_client.parser import text_string_to_metric_families

from mcpactor import connect_http

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'observed_server.py'}:server"


def _scrape(url: str, path: str = "/metrics", method: str = "GET") -> tuple[int, str, str]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(method, path)
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, str(r.getheader("content-type")), body


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return samples[(name, tuple(sorted(labels.items())))]


async def test_metrics_endpoint(http_server: object, tmp_path: Path) -> None:
    proc, url = http_server(SERVER, "--metrics", "--trace",  # type: ignore[operator]
                            f"{tmp_path}/traces/")
    async with connect_http(url, mode="legacy") as client:
        for city in ("a", "b", "c"):
            await client.call_tool("lookup", {"city": city})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.call_tool, "hold", {"seconds": 1.0})
            await trio.sleep(0.3)
            status, ctype, text = await trio.to_thread.run_sync(_scrape, url)
        assert status == 200 and ctype.startswith("text/plain")
        during = _samples(text)
        assert _value(during, "mcpactor_sessions_live") == 1
        assert _value(during, "mcpactor_handler_slots_in_use") == 1
        assert _value(during, "mcpactor_requests_queued") == 0
        assert _value(during, "mcpactor_tasks_running") == 1  # the registered hook
        assert _value(during, "mcpactor_trio_tasks_living") > 1
        assert _value(during, "mcpactor_trace_records_lost") == 0
        assert ("mcpactor_trace_writer_lag_seconds", ()) in during
        assert ("mcpactor_trace_writer_backlog_bytes", ()) in during
        calls = _value(during, "mcp_server_operation_duration_seconds_count",
                       mcp_method_name="tools/call", error_type="")
        assert calls == 3
        # Buckets by the conventions' boundaries.
        assert ("mcp_server_operation_duration_seconds_bucket",
                (("error_type", ""), ("le", "300.0"), ("mcp_method_name", "tools/call"))) \
            in during
    _, _, text = await trio.to_thread.run_sync(_scrape, url)
    after = _samples(text)
    assert _value(after, "mcp_server_operation_duration_seconds_count",
                  mcp_method_name="tools/call", error_type="") == 4
    assert _value(after, "mcpactor_handler_slots_in_use") == 0
    assert _value(after, "mcpactor_tasks_running") == 0
    assert _value(after, "mcp_server_operation_duration_seconds_count",
                  mcp_method_name="initialize", error_type="") == 1
    assert _value(after, "mcp_server_session_duration_seconds_count", error_type="") == 1
    status, _, _ = await trio.to_thread.run_sync(lambda: _scrape(url, method="POST"))
    assert status == 405
    # The stateless revision's requests are counted alike.
    async with connect_http(url, mode="2026-07-28") as client:
        await client.call_tool("lookup", {"city": "d"})
    _, _, text = await trio.to_thread.run_sync(_scrape, url)
    assert _value(_samples(text), "mcp_server_operation_duration_seconds_count",
                  mcp_method_name="tools/call", error_type="") == 5
    proc.terminate()


def test_metrics_needs_http() -> None:
    done = subprocess.run([sys.executable, "-m", "mcpactor", "run", SERVER, "--metrics"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "need --transport http" in done.stderr and "--metrics" in done.stderr
    done = subprocess.run([sys.executable, "-m", "mcpactor", "run", SERVER, "--transport",
                           "http", "--metrics", "metrics"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mcpactor: --metrics metrics: the path must start with / "
                                   "(e.g. /metrics)")
