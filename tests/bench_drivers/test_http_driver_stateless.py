"""The HTTP benchmark driver's 2026-07-28 mode against a real ``mcpactor run`` server:
discover, then stateless calls our server checks (``_meta``, version and SEP-2243
headers: a wrong one would be a 400 and a BenchError)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from urllib.parse import urlsplit

from benchmarks.drivers import http_client

HttpServer = Callable[..., tuple[subprocess.Popen[bytes], str]]


def test_stateless_calls_against_our_server(http_server: HttpServer) -> None:
    _, url = http_server("benchmarks/servers/echo_mcpactor.py:server")
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    m = http_client.measure(parts.hostname, parts.port, conns=2, duration=0.2, warmup=0.05,
                            stateless=True)
    assert m.calls > 0 and m.protocol_version == "2026-07-28"
    session = http_client.HttpSession(parts.hostname, parts.port, stateless=True)
    try:
        session.open()
        assert session.session_id is None  # no initialize, no session
        session.call()
    finally:
        session.close()
