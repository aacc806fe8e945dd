"""The resource server side, over raw HTTP: metadata documents, 401/403/400 answers with
their WWW-Authenticate challenges, JWT checks (audience, expiry, issuer), introspection,
per-tool scopes, ctx.auth, and sessions bound to their principal."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from oauth_stub import LateVerifier, oauth_stack

from mcpactor.auth.challenge import find_bearer
from mcpactor.auth.verifier import IntrospectionVerifier, InvalidToken, JwtVerifier
from mcpactor.transports.http_client import HttpPool

INIT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}})
BASE = [("accept", "application/json, text/event-stream"), ("content-type", "application/json")]


async def _post(pool: HttpPool, url: str, body: bytes, headers: list[tuple[str, str]]) -> tuple[int, dict[str, str], Any]:
    resp = await pool.request("POST", url, [*BASE, *headers], body)
    raw = await resp.read()
    await resp.aclose()
    data: Any = None
    if raw.startswith(b"{"):
        data = orjson.loads(raw)
    elif b"data: " in raw:  # an SSE answer: its message event
        data = orjson.loads(raw.split(b"data: ")[-1].split(b"\n")[0])
    return resp.status, resp.headers, data


def _bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def test_protected_resource_metadata_is_served_at_both_locations() -> None:
    with trio.fail_after(10):
        async with oauth_stack() as st:
            pool = HttpPool()
            origin = st.mcp_url.rsplit("/mcp", 1)[0]
            for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                resp = await pool.request("GET", origin + path)
                doc = orjson.loads(await resp.read())
                await resp.aclose()
                assert resp.status == 200
                assert doc["resource"] == st.mcp_url
                assert doc["authorization_servers"] == [st.as_url]
                assert doc["scopes_supported"] == ["mcp:read", "mcp:admin"]
            assert st.resource_server.metadata_url == origin + "/.well-known/oauth-protected-resource/mcp"
            await pool.aclose()


async def test_refusals_and_their_challenges() -> None:
    with trio.fail_after(10):
        async with oauth_stack() as st:
            pool = HttpPool()
            a = st.auth
            ok = a.mint(sub="alice", client_id="c", scope="mcp:read", resource=st.mcp_url)
            cases: list[tuple[list[tuple[str, str]], str, int, str | None]] = [
                ([], "", 401, None),
                (_bearer("not-a-jwt"), "", 401, "invalid_token"),
                (_bearer(a.mint(sub="alice", client_id="c", scope="mcp:read",
                                resource="http://127.0.0.1:1/other")), "", 401, "invalid_token"),
                (_bearer(a.mint(sub="alice", client_id="c", scope="mcp:read", resource=st.mcp_url,
                                lifetime=-120)), "", 401, "invalid_token"),
                (_bearer(a.mint(sub="alice", client_id="c", scope="mcp:read", resource=st.mcp_url,
                                iss="http://evil.example")), "", 401, "invalid_token"),
                (_bearer(a.mint(sub="alice", client_id="c", scope="", resource=st.mcp_url)), "",
                 403, "insufficient_scope"),
                ([("authorization", f"Basic {ok}")], "", 401, None),
                ([("authorization", f"Bearer {ok}"), ("authorization", f"Bearer {ok}")], "", 400,
                 "invalid_request"),
                ([], f"?access_token={ok}", 400, "invalid_request"),
            ]
            for headers, query, status, error in cases:
                got, resp_headers, body = await _post(pool, st.mcp_url + query, INIT, headers)
                assert got == status, (headers, query)
                ch = find_bearer(resp_headers.get("www-authenticate"))
                assert ch is not None
                assert ch.resource_metadata == st.resource_server.metadata_url
                assert ch.error == error
                assert ch.scope == "mcp:read"
                assert isinstance(body, dict) and "error" in body
            # and the valid token gets through
            got, _, body = await _post(pool, st.mcp_url, INIT, _bearer(ok))
            assert got == 200 and body["result"]["serverInfo"]["name"] == "protected-server"
            await pool.aclose()


async def test_per_tool_scopes_and_ctx_auth() -> None:
    with trio.fail_after(10):
        async with oauth_stack() as st:
            pool = HttpPool()
            tok = st.auth.mint(sub="alice", client_id="c", scope="mcp:read", resource=st.mcp_url)
            status, headers, _ = await _post(pool, st.mcp_url, INIT, _bearer(tok))
            sid = headers["mcp-session-id"]
            session = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25"), *_bearer(tok)]
            await _post(pool, st.mcp_url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)

            def call(name: str, rid: int) -> bytes:
                return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                     "params": {"name": name, "arguments": {}}})

            status, _, body = await _post(pool, st.mcp_url, call("whoami", 2), session)
            assert status == 200 and body["result"]["content"][0]["text"] == "alice mcp:read"
            status, headers, _ = await _post(pool, st.mcp_url, call("admin_op", 3), session)
            assert status == 403
            ch = find_bearer(headers["www-authenticate"])
            assert ch is not None and ch.error == "insufficient_scope"
            assert ch.scope is not None and set(ch.scope.split()) == {"mcp:read", "mcp:admin"}
            # the session is bound to alice: bob's valid token cannot use it
            bob = st.auth.mint(sub="bob", client_id="c", scope="mcp:read", resource=st.mcp_url)
            stolen = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25"), *_bearer(bob)]
            status, _, _ = await _post(pool, st.mcp_url, call("whoami", 4), stolen)
            assert status == 403
            # alice with more scopes (a step-up) keeps her session
            admin = st.auth.mint(sub="alice", client_id="c", scope="mcp:read mcp:admin", resource=st.mcp_url)
            upgraded = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25"), *_bearer(admin)]
            status, _, body = await _post(pool, st.mcp_url, call("admin_op", 5), upgraded)
            assert status == 200 and body["result"]["content"][0]["text"] == "admin done"
            await pool.aclose()


async def test_ctx_auth_is_the_token_of_each_request() -> None:
    """Two requests of one principal with different tokens, in flight together: each
    handler sees the token its own POST carried, not the session's latest."""
    with trio.fail_after(15):
        async with oauth_stack() as st:
            pool_a, pool_b = HttpPool(), HttpPool()
            admin = st.auth.mint(sub="alice", client_id="c", scope="mcp:read mcp:admin", resource=st.mcp_url)
            read = st.auth.mint(sub="alice", client_id="c", scope="mcp:read", resource=st.mcp_url)
            _, headers, _ = await _post(pool_a, st.mcp_url, INIT, _bearer(admin))
            sid = headers["mcp-session-id"]
            base = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25")]
            await _post(pool_a, st.mcp_url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', [*base, *_bearer(admin)])
            got: dict[str, str] = {}

            async def call(pool: HttpPool, name: str, rid: int, token: str) -> None:
                body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                     "params": {"name": name, "arguments": {}}})
                status, _, data = await _post(pool, st.mcp_url, body, [*base, *_bearer(token)])
                assert status == 200
                got[name] = data["result"]["content"][0]["text"]

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, pool_a, "slow_whoami", 10, admin)
                await trio.sleep(0.1)
                nursery.start_soon(call, pool_b, "whoami", 11, read)
            assert got == {"slow_whoami": "alice mcp:admin mcp:read", "whoami": "alice mcp:read"}
            await pool_a.aclose()
            await pool_b.aclose()


async def test_introspection_verifier() -> None:
    late = LateVerifier()
    with trio.fail_after(10):
        async with oauth_stack(verifier=late) as st:
            late.inner = IntrospectionVerifier(introspection_endpoint=f"{st.as_url}/introspect",
                                               audience=st.mcp_url)
            pool = HttpPool()
            good = st.auth.mint(sub="carol", client_id="c", scope="mcp:read", resource=st.mcp_url)
            status, _, _ = await _post(pool, st.mcp_url, INIT, _bearer(good))
            assert status == 200
            other = st.auth.mint(sub="carol", client_id="c", scope="mcp:read", resource="https://elsewhere/mcp")
            status, _, _ = await _post(pool, st.mcp_url, INIT, _bearer(other))
            assert status == 401
            status, _, _ = await _post(pool, st.mcp_url, INIT, _bearer("garbage"))
            assert status == 401
            seen = st.auth.requests("/introspect")
            assert len(seen) == 3 and seen[0].form["token"] == good
            await pool.aclose()


async def test_jwt_verifier_directly() -> None:
    with trio.fail_after(10):
        async with oauth_stack() as st:
            v = JwtVerifier(issuer=st.as_url, audience=st.mcp_url, jwks_url=f"{st.as_url}/jwks",
                            refetch_interval=0)
            tok = st.auth.mint(sub="dave", client_id="cid", scope="a b", resource=st.mcp_url + "/")
            access = await v.verify(tok)
            assert (access.subject, access.client_id, access.scopes) == ("dave", "cid", frozenset({"a", "b"}))
            assert access.token not in repr(access)
            # a token signed by a key the issuer never published
            st.auth.kid = "rotated"
            from cryptography.hazmat.primitives.asymmetric import ec
            st.auth.key = ec.generate_private_key(ec.SECP256R1())
            forged = st.auth.mint(sub="dave", client_id="cid", scope="a", resource=st.mcp_url)
            # ... which the issuer did publish after a rotation: the refetch finds it
            assert (await v.verify(forged)).subject == "dave"
            import jwt as pyjwt
            stranger = pyjwt.algorithms.ECAlgorithm.to_jwk(
                ec.generate_private_key(ec.SECP256R1()).public_key(), as_dict=True)
            stranger["kid"] = "rotated"
            fixed = JwtVerifier(issuer=st.as_url, audience=st.mcp_url, jwks={"keys": [stranger]})
            with pytest.raises(InvalidToken):
                await fixed.verify(forged)
            with pytest.raises(InvalidToken):
                await v.verify("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")  # alg=none


async def test_legacy_sse_endpoints_are_protected_too() -> None:
    with trio.fail_after(10):
        async with oauth_stack() as st:
            pool = HttpPool()
            origin = st.mcp_url.rsplit("/mcp", 1)[0]
            resp = await pool.request("GET", origin + "/sse", [("accept", "text/event-stream")])
            await resp.read()
            await resp.aclose()
            assert resp.status == 401 and "resource_metadata=" in resp.headers["www-authenticate"]
            status, _, _ = await _post(pool, origin + "/messages/?session_id=x", INIT, [])
            assert status == 401
            # unprotected paths stay as they were (404), and carry no challenge
            resp = await pool.request("GET", origin + "/elsewhere")
            await resp.read()
            await resp.aclose()
            assert resp.status == 404 and "www-authenticate" not in resp.headers
            await pool.aclose()
