"""`mcpactor run --transport http --auth-*`: a real server process protected by the flags,
against the stub authorization server, all on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import trio
from oauth_stub import free_port, start_stub

from mcpactor import McpError, connect_http
from mcpactor.transports.http_client import HttpPool

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/auth/cli_protected_server.py:server"


async def _wait_listening(port: int, proc: trio.Process) -> None:
    with trio.fail_after(30):
        while True:
            assert proc.returncode is None, "the server exited"
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
                continue
            await stream.aclose()
            return


async def test_the_auth_flags_protect_the_endpoint() -> None:
    async with trio.open_nursery() as nursery:
        stub = await start_stub(nursery)
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "mcpactor.cli", "run", TARGET, "--transport", "http",
             "--port", str(port), "--auth-issuer", stub.base,
             "--auth-jwks", f"{stub.base}/jwks", "--auth-scope", "mcp:read"],
            cwd=ROOT, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            await _wait_listening(port, proc)
            pool = HttpPool()
            # No token: 401, pointing at the resource metadata.
            resp = await pool.request("POST", url, [("content-type", "application/json"),
                                                    ("accept", "application/json, text/event-stream")],
                                      b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
            await resp.read()
            await resp.aclose()
            assert resp.status == 401
            challenge = resp.headers["www-authenticate"]
            prm_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
            assert f'resource_metadata="{prm_url}"' in challenge and 'scope="mcp:read"' in challenge
            # The metadata names the issuer and this server's URI.
            resp = await pool.request("GET", prm_url)
            prm = orjson.loads(await resp.read())
            await resp.aclose()
            assert prm["resource"] == url and prm["authorization_servers"] == [stub.base]
            await pool.aclose()
            # A token the issuer minted for this resource gets through.
            token = stub.mint(sub="alice", client_id="cli", scope="mcp:read", resource=url)
            async with connect_http(url, headers={"Authorization": f"Bearer {token}"}) as client:
                result = await client.call_tool("whoami", {})
                assert result.content[0].text == "alice mcp:read"  # type: ignore[union-attr]
            # One minted for another resource does not.
            other = stub.mint(sub="mallory", client_id="cli", scope="mcp:read",
                              resource="http://127.0.0.1:1/mcp")
            with pytest.raises(McpError):
                async with connect_http(url, headers={"Authorization": f"Bearer {other}"},
                                        init_timeout=10):
                    pass
        finally:
            proc.kill()
            await proc.wait()
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--auth-jwks", "http://127.0.0.1:9/jwks"], "--auth-jwks needs --auth-issuer URL"),
     (["--transport", "http", "--auth-issuer", "http://127.0.0.1:9"],
      "say how tokens are checked: --auth-jwks URL"),
     (["--transport", "http", "--auth-issuer", "ftp://x", "--auth-jwks", "http://127.0.0.1:9/j"],
      "--auth-issuer 'ftp://x' is not an http(s) URL"),
     (["--transport", "http", "--port", "0", "--auth-issuer", "http://127.0.0.1:9",
       "--auth-jwks", "http://127.0.0.1:9/j"], "pass --auth-resource URI"),
     (["--auth-issuer", "http://127.0.0.1:9", "--auth-jwks", "http://127.0.0.1:9/j"],
      "use them with --transport http")],
)
def test_auth_flags_that_do_not_fit_together_are_one_line(flags: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "mcpactor.cli", "run", TARGET, *flags],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
                          input="")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
