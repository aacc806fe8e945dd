"""What MCP 2026-07-28 adds to the client's authorization, against real authorization
server stubs and a protected mcpactor server on 127.0.0.1: ``application_type`` in
Dynamic Client Registration (SEP-837), the RFC 9207 ``iss`` checks (SEP-2468), and the
move to another authorization server (SEP-2352: register again, reuse nothing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
from oauth_stub import StubAuthServer, free_port, protected_server, start_stub

from mcpactor import connect_http
from mcpactor.auth import (
    AuthorizationCodeGrant,
    AuthorizationError,
    ClientConfig,
    HeadlessRedirectHandler,
    OAuthClient,
)
from mcpactor.auth.registration import application_type
from mcpactor.auth.resource_server import ResourceServer
from mcpactor.auth.verifier import JwtVerifier
from mcpactor.protocol.errors import RequestError
from mcpactor.transports.http_server import HttpOptions, McpHttpApp, serve_app

CALLBACK = "http://127.0.0.1:9/callback"


def _client(url: str, **config: Any) -> OAuthClient:
    return OAuthClient(url, config=ClientConfig(**config),
                       grant=AuthorizationCodeGrant(HeadlessRedirectHandler(CALLBACK)))


def _verifier(stub: StubAuthServer, url: str) -> JwtVerifier:
    return JwtVerifier(issuer=stub.base, audience=url, jwks_url=f"{stub.base}/jwks")


@asynccontextmanager
async def _stack(**stub_options: Any) -> AsyncIterator[tuple[list[StubAuthServer], str,
                                                                ResourceServer]]:
    """Two authorization servers (the resource names the first) and a protected server."""
    async with trio.open_nursery() as nursery:
        stubs = [await start_stub(nursery, **stub_options), await start_stub(nursery)]
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        rs = ResourceServer(resource=url, authorization_servers=[stubs[0].base],
                            verifier=_verifier(stubs[0], url), required_scopes=("mcp:read",))
        app = McpHttpApp(protected_server(), HttpOptions(auth=rs))
        await nursery.start(lambda task_status: serve_app(
            app, host="127.0.0.1", port=port, quiet=True, task_status=task_status))
        try:
            yield stubs, url, rs
        finally:
            nursery.cancel_scope.cancel()


def test_application_type_follows_the_redirect_uri() -> None:
    assert application_type("http://127.0.0.1:8765/callback") == "native"
    assert application_type("http://localhost/cb") == "native"
    assert application_type("http://[::1]:9/cb") == "native"
    assert application_type("com.example.app:/oauth") == "native"
    assert application_type("https://app.example.com/cb") == "web"
    assert application_type(None) == "web"


@pytest.mark.parametrize(("config", "expected"), [({}, "native"),
                                                   ({"application_type": "web"}, "web")])
async def test_registration_names_the_application_type(config: dict[str, Any],
                                                       expected: str) -> None:
    with trio.fail_after(20):
        async with _stack() as (stubs, url, _):
            async with connect_http(url, auth=_client(url, **config), timeout=10) as client:
                await client.call_tool("whoami", {})
            [reg] = stubs[0].requests("/register")
            assert orjson.loads(reg.form["_json"])["application_type"] == expected


@pytest.mark.parametrize(("supported", "iss", "accepted"), [
    (True, "correct", True),
    (False, "omit", True),
    (True, "omit", False),    # advertised, then missing: refused
    (True, "wrong", False),
    (False, "wrong", False),  # compared even when not advertised
    (True, "slash", False),   # compared as a plain string, no URL normalisation
])
async def test_the_authorization_response_issuer(supported: bool, iss: str,
                                                 accepted: bool) -> None:
    with trio.fail_after(20):
        async with _stack(iss_supported=supported, iss=iss) as (stubs, url, _):
            if accepted:
                async with connect_http(url, auth=_client(url), timeout=10) as client:
                    await client.call_tool("whoami", {})
            else:
                with pytest.raises((AuthorizationError, RequestError), match="iss"):
                    async with connect_http(url, auth=_client(url), timeout=10) as client:
                        await client.call_tool("whoami", {})
            # A refused response never reaches the token endpoint with its code.
            assert bool(stubs[0].requests("/token")) == accepted


async def test_moving_to_another_authorization_server_registers_again() -> None:
    with trio.fail_after(30):
        async with _stack() as (stubs, url, rs):
            old, new = stubs
            auth = _client(url)
            async with connect_http(url, auth=auth, timeout=10) as client:
                await client.call_tool("whoami", {})
                old_client = old.requests("/token")[0].form["client_id"]
                rs.move_to([new.base], _verifier(new, url))
                result = await client.call_tool("whoami", {})
                assert result.content[0].text.startswith("alice")
            # Registered anew at the new server, which never saw the old client id.
            assert len(new.requests("/register")) == 1
            new_ids = {s.query.get("client_id") for s in new.requests("/authorize")}
            new_ids |= {s.form.get("client_id") for s in new.requests("/token")}
            assert old_client not in new_ids
            # The old server's refresh token was not tried against the moved resource.
            assert [s.form["grant_type"] for s in old.requests("/token")] == [
                "authorization_code"]
            assert [s.form["grant_type"] for s in new.requests("/token")] == [
                "authorization_code"]
