"""The authorization page's example (docs/examples/auth_example.py) runs: its clients
against real authorization and resource servers on 127.0.0.1, its protected server
with its own ResourceServer."""

from __future__ import annotations

import importlib.util
import stat
import sys
import urllib.request
from pathlib import Path
from types import ModuleType

import trio
from ext_stub import ext_stack
from oauth_stub import free_port, start_stub

from mcpactor import connect_http
from mcpactor.transports.http_server import HttpOptions, McpHttpApp, serve_app

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "auth_example.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guide_auth_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _browser(url: str) -> None:
    """The user's browser: open the login page, follow the redirect to the listener."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200


async def test_the_user_client_logs_in_once_and_keeps_a_dpop_key(tmp_path: Path) -> None:
    ex = _example()
    with trio.fail_after(30):
        async with ext_stack(server=ex.server) as st:  # a DPoP-only resource
            auth = ex.user_client(st.mcp_url, tmp_path, open_url=_browser)
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                assert await ex.demo(client) == "anonymous"  # (the gate passes no ctx.auth)
            key = tmp_path / "dpop-key.pem"
            assert stat.S_IMODE(key.stat().st_mode) == 0o600
            [tok] = st.auth.token_requests
            assert tok.jkt == auth.dpop.key.thumbprint
            # The next run: the kept key and tokens, no login, no token request.
            again = ex.user_client(st.mcp_url, tmp_path, open_url=lambda url: 1 / 0)
            async with connect_http(st.mcp_url, auth=again, timeout=10) as client:
                await ex.demo(client)
            assert len(st.auth.token_requests) == 1
            assert {j.scheme for j in st.gate.judged if j.verdict == "ok"} == {"DPoP"}


async def test_the_workload_client(tmp_path: Path) -> None:
    ex = _example()
    with trio.fail_after(30):
        async with ext_stack(server=ex.server, schemes=("Bearer",)) as st:
            token_file = tmp_path / "token"
            token_file.write_text(st.auth.workload_jwt())
            auth = ex.workload_client(st.mcp_url, token_file)
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                await ex.demo(client)
            assert [r.status for r in st.auth.token_requests] == [200]


async def test_the_protected_server_and_the_user_client(tmp_path: Path) -> None:
    ex = _example()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            stub = await start_stub(nursery)
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            app = McpHttpApp(ex.server, HttpOptions(auth=ex.protection(url, stub.base)))
            await nursery.start(lambda task_status: serve_app(
                app, host="127.0.0.1", port=port, quiet=True, task_status=task_status))
            auth = ex.user_client(url, tmp_path, open_url=_browser)
            async with connect_http(url, auth=auth, timeout=10) as client:
                assert await ex.demo(client) == "alice"
            [authz] = stub.requests("/authorize")
            assert "notes:read" in authz.query["scope"].split()
            nursery.cancel_scope.cancel()
