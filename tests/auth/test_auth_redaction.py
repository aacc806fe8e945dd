"""Secrets never reach logs or traces: a whole OAuth flow (registration, PKCE, tokens,
step-up, refresh, a refused query-string token) with DEBUG logging captured and traces
recorded on both sides, then every secret the authorization server handed out or
received is looked for in all of it."""

from __future__ import annotations

import logging
import time
from typing import Any

import trio
from oauth_stub import oauth_stack

from mcpactor import connect_http
from mcpactor.auth import AuthorizationCodeGrant, HeadlessRedirectHandler, OAuthClient
from mcpactor.tracing.recorder import Recorder, TraceHeader
from mcpactor.transports.http_client import HttpPool


async def test_no_secret_reaches_logs_or_traces(tmp_path: Any, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    server_traces = tmp_path / "server"
    client_trace = tmp_path / "client.jsonl"
    skew = [0.0]
    # Both sides recorded in this one Trio run: the server's sessions one file each, the
    # client's its own file.
    server_recorder = Recorder(TraceHeader(role="server", transport="http"), server_traces,
                               split=True)
    tracer = Recorder(TraceHeader(role="client", transport="http"), client_trace)
    with trio.fail_after(20):
        async with server_recorder.recording(), tracer.recording(), \
                oauth_stack(tracer=server_recorder) as st:
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")), clock=lambda: time.time() + skew[0])
            async with connect_http(st.mcp_url, auth=auth, tracer=tracer, timeout=10) as client:
                await client.call_tool("whoami", {})
                await client.call_tool("admin_op", {})  # step-up: a second authorization
                skew[0] = 7200.0  # expired: the next call refreshes first
                await client.call_tool("whoami", {})
                logging.getLogger("mcpactor.test").debug("client state: %r %r", auth._tokens, auth._client)
            # a token in the query string is refused without being echoed anywhere
            token = st.auth.issued[-1]
            pool = HttpPool()
            resp = await pool.request("POST", f"{st.mcp_url}?access_token={token}",
                                      [("content-type", "application/json"),
                                       ("accept", "application/json, text/event-stream")], b"{}")
            body = await resp.read()
            await resp.aclose()
            await pool.aclose()
            assert resp.status == 400 and token.encode() not in body

    secrets: list[str] = list(st.auth.issued)
    secrets += list(st.auth.revoked_refresh) + list(st.auth.refresh)
    secrets += [c["client_secret"] for c in st.auth.clients.values() if c.get("client_secret")]
    for seen in st.auth.seen:
        for name in ("code", "code_verifier", "refresh_token", "client_secret"):
            if name in seen.form:
                secrets.append(seen.form[name])
    assert len(st.auth.issued) >= 3 and len(st.auth.revoked_refresh) >= 1
    assert any(s.form.get("code_verifier") for s in st.auth.seen)

    traces = [p.read_text() for p in server_traces.glob("*.jsonl")]
    traces.append(client_trace.read_text())
    assert all(traces) and any("whoami" in t for t in traces)  # the traces did record the calls
    logs = caplog.text
    assert "client state" in logs and "mcpactor" in logs
    everything = logs + "\n".join(traces)
    leaked = [s for s in secrets if s and s in everything]
    assert leaked == []
