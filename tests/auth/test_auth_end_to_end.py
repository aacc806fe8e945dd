"""Our OAuth client against a real authorization server stub and a protected mcpactor
server, end to end: 401 → discovery → registration → PKCE → token → call; refresh
with rotation; step-up; the retry limit; client credentials; shared storage."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest
import trio
from oauth_stub import LateVerifier, oauth_stack, pkce_s256

from mcpactor import connect_http, connect_sse
from mcpactor.auth import (
    AuthorizationCodeGrant,
    AuthorizationError,
    ClientConfig,
    ClientCredentialsGrant,
    FileTokenStorage,
    HeadlessRedirectHandler,
    LoopbackRedirectHandler,
    OAuthClient,
)
from mcpactor.auth.verifier import JwtVerifier
from mcpactor.protocol.errors import RequestError
from mcpactor.transports.base import TransportClosed


def _browser(url: str) -> None:
    """What a user's browser does: open the URL, follow the redirect to the loopback
    listener (runs in a thread, as LoopbackRedirectHandler calls it)."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200


def _text(result: Any) -> str:
    return result.content[0].text


def _who(result: Any) -> tuple[str, set[str]]:
    """(subject, scopes) from the whoami tool."""
    subject, *scopes = _text(result).split()
    return subject, set(scopes)


# The stub lists offline_access, so an interactive client asks for it (SEP-2207).
READ = {"mcp:read", "offline_access"}


async def test_authorization_code_flow_end_to_end() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            redirect = LoopbackRedirectHandler(open_url=_browser)
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(redirect))
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                result = await client.call_tool("whoami", {})
            assert _who(result) == ("alice", READ)
            a = st.auth
            # discovery: AS metadata fetched, client registered with our redirect URI
            assert a.requests("/.well-known/oauth-authorization-server")
            [reg] = a.requests("/register")
            assert '"redirect_uris":["http://127.0.0.1:' in reg.form["_json"]
            # authorization request: PKCE S256, resource, scope from the challenge
            [authz] = a.requests("/authorize")
            assert authz.query["code_challenge_method"] == "S256"
            assert authz.query["resource"] == st.mcp_url
            assert set(authz.query["scope"].split()) == READ
            [tok] = a.requests("/token")
            assert tok.form["grant_type"] == "authorization_code"
            assert pkce_s256(tok.form["code_verifier"]) == authz.query["code_challenge"]
            assert tok.form["resource"] == st.mcp_url
            # the stub allows public clients, so we registered as one: no secret to leak
            assert '"token_endpoint_auth_method":"none"' in reg.form["_json"]
            assert "authorization" not in tok.headers and "client_secret" not in tok.form
            assert tok.form["client_id"] == authz.query["client_id"]


async def test_token_refresh_with_rotation_after_revocation() -> None:
    late = LateVerifier()
    with trio.fail_after(20):
        async with oauth_stack(verifier=late) as st:
            late.inner = JwtVerifier(issuer=st.as_url, audience=st.mcp_url, jwks_url=f"{st.as_url}/jwks")
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")))
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                await client.call_tool("whoami", {})
                first = await auth.access_token()
                assert first is not None
                late.revoked.add(first)  # the server now refuses the access token: 401
                assert _who(await client.call_tool("whoami", {})) == ("alice", READ)
            grants = [s.form["grant_type"] for s in st.auth.requests("/token")]
            assert grants == ["authorization_code", "refresh_token"]
            assert len(st.auth.requests("/authorize")) == 1  # no new user interaction
            second = await auth.access_token()
            assert second is not None and second != first
            # rotation: the refresh token used is dead now, and reusing it fails
            used = st.auth.requests("/token")[-1].form["refresh_token"]
            assert used in st.auth.revoked_refresh and used not in st.auth.refresh


async def test_expired_token_is_refreshed_before_use() -> None:
    skew = [0.0]
    with trio.fail_after(20):
        async with oauth_stack() as st:
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")), clock=lambda: time.time() + skew[0])
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                await client.call_tool("whoami", {})
                skew[0] = 7200  # past expires_in: the next request refreshes first
                await client.call_tool("whoami", {})
            grants = [s.form["grant_type"] for s in st.auth.requests("/token")]
            assert grants == ["authorization_code", "refresh_token"]


async def test_step_up_on_insufficient_scope() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")))
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                assert _who(await client.call_tool("whoami", {})) == ("alice", READ)
                assert _text(await client.call_tool("admin_op", {})) == "admin done"
                assert _who(await client.call_tool("whoami", {})) == ("alice", READ | {"mcp:admin"})
            scopes = [set(s.query["scope"].split()) for s in st.auth.requests("/authorize")]
            assert scopes == [READ, READ | {"mcp:admin"}]


async def test_step_up_gives_up_after_the_retry_limit() -> None:
    with trio.fail_after(20):
        async with oauth_stack(grantable={"mcp:read"}) as st:
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")), max_authorizations=3)
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                await client.call_tool("whoami", {})
                with pytest.raises(RequestError, match="authorizations"):
                    await client.call_tool("admin_op", {})
                # the session survives a refused call
                assert _who(await client.call_tool("whoami", {})) == ("alice", {"mcp:read"})
            assert 2 <= len(st.auth.requests("/authorize")) <= 4


def _machine_client(st: Any) -> OAuthClient:
    """A confidential client the stub knows, using the client-credentials grant."""
    st.auth.clients["machine"] = {"client_id": "machine", "client_secret": "s3cret-machine"}
    return OAuthClient(st.mcp_url, grant=ClientCredentialsGrant(),
                       config=ClientConfig(client_id="machine", client_secret="s3cret-machine"))


async def test_client_credentials_grant() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            auth = _machine_client(st)
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                assert _who(await client.call_tool("whoami", {})) == ("machine", {"mcp:read"})
            [tok] = st.auth.requests("/token")
            assert tok.form["grant_type"] == "client_credentials"
            assert tok.form["resource"] == st.mcp_url
            assert not st.auth.requests("/authorize") and not st.auth.requests("/register")


async def test_stored_tokens_are_reused_by_a_new_client(tmp_path: Any) -> None:
    path = tmp_path / "tokens.json"
    with trio.fail_after(20):
        async with oauth_stack() as st:
            for _ in range(2):
                auth = OAuthClient(st.mcp_url, storage=FileTokenStorage(path),
                                   grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                                       "http://127.0.0.1:9/callback")))
                async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                    await client.call_tool("whoami", {})
            assert len(st.auth.requests("/authorize")) == 1
            assert len(st.auth.requests("/register")) == 1
            assert path.stat().st_mode & 0o777 == 0o600


async def test_resource_mismatch_is_refused() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            other = st.mcp_url.replace("/mcp", "/other")
            auth = OAuthClient(other, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")))
            # A challenge pointing at the metadata of /mcp, which does not cover /other.
            challenge = f'Bearer resource_metadata="{st.resource_server.metadata_url}"'
            with pytest.raises(AuthorizationError, match="refusing to authorize"):
                await auth.handle_challenge(401, challenge, None)
            await auth.aclose()
            assert not st.auth.requests("/authorize") and not st.auth.requests("/register")


async def test_auth_client_against_an_open_server_sends_nothing() -> None:
    from mcpactor import Server
    from mcpactor.transports.http_server import HttpOptions, McpHttpApp, serve_app

    server = Server("open-server", version="1.0.0")
    seen: list[str | None] = []

    @server.tool()
    async def ping_tool() -> str:
        """Answer."""
        return "pong"

    class Spy(McpHttpApp):
        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                seen.append(headers.get("authorization"))
            await super().__call__(scope, receive, send)

    app = Spy(server, HttpOptions())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(lambda task_status: serve_app(
                app, host="127.0.0.1", port=0, quiet=True, task_status=task_status))
            # No authorization server exists: any attempt to use one would fail the call.
            auth = OAuthClient(url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")))
            async with connect_http(url, auth=auth, timeout=5) as client:
                assert _text(await client.call_tool("ping_tool", {})) == "pong"
            nursery.cancel_scope.cancel()
    assert seen and all(h is None for h in seen)


async def test_plain_http_authorization_server_is_refused() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            # The stub is on 127.0.0.1 (allowed); pretend its token endpoint is elsewhere.
            real = st.auth.metadata
            st.auth.metadata = lambda: {**real(), "token_endpoint": "http://as.example/token"}  # type: ignore[method-assign]
            auth = OAuthClient(st.mcp_url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler(
                "http://127.0.0.1:9/callback")))
            with pytest.raises(AuthorizationError, match="not HTTPS"):
                await auth.handle_challenge(401, None, None)
            await auth.aclose()
            assert not st.auth.requests("/authorize") and not st.auth.requests("/register")


async def test_stored_registration_for_another_redirect_uri_is_replaced() -> None:
    from mcpactor.auth import ClientInfo, InMemoryTokenStorage

    with trio.fail_after(20):
        async with oauth_stack() as st:
            storage = InMemoryTokenStorage()
            stale = ClientInfo(client_id="stale", redirect_uris=["http://127.0.0.1:1/old"])
            await storage.set_client(st.as_url, stale)
            auth = OAuthClient(st.mcp_url, storage=storage, grant=AuthorizationCodeGrant(
                HeadlessRedirectHandler("http://127.0.0.1:9/callback")))
            async with connect_http(st.mcp_url, auth=auth, timeout=10) as client:
                await client.call_tool("whoami", {})
            assert len(st.auth.requests("/register")) == 1
            fresh = await storage.get_client(st.as_url)
            assert fresh is not None and fresh.client_id != "stale"
            assert fresh.redirect_uris == ["http://127.0.0.1:9/callback"]


async def test_the_legacy_sse_client_gets_through_with_oauth_too() -> None:
    # The 2024-11-05 endpoints (GET /sse, POST /messages) sit behind the same resource
    # server: the stream's 401 starts the flow, every POST carries the token.
    with trio.fail_after(20):
        async with oauth_stack() as st:
            auth = _machine_client(st)
            sse_url = st.mcp_url.rsplit("/mcp", 1)[0] + "/sse"
            async with connect_sse(sse_url, auth=auth, timeout=10) as client:
                assert client.protocol_version == "2024-11-05"
                assert _who(await client.call_tool("whoami", {})) == ("machine", {"mcp:read"})
            [tok] = st.auth.requests("/token")
            assert tok.form["resource"] == st.mcp_url


async def test_the_legacy_sse_endpoint_refuses_a_client_without_a_token() -> None:
    with trio.fail_after(20):
        async with oauth_stack() as st:
            sse_url = st.mcp_url.rsplit("/mcp", 1)[0] + "/sse"
            with pytest.raises(TransportClosed, match="answered HTTP 401"):
                async with connect_sse(sse_url, timeout=5, init_timeout=5):
                    pass
