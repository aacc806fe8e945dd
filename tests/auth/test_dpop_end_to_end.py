"""DPoP end to end: our client against a real authorization server and a resource
server gate on 127.0.0.1 (tests/auth/ext_stub.py) that check every proof on their own:
token request proofs, the DPoP scheme with a fresh proof per request, ``ath``,
``cnf.jkt``, nonces from both servers (and their rotation), refresh, the modes, keys
kept across clients."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from ext_stub import ExtAuthServer, ext_stack, verify_proof

from mcpactor import connect_http
from mcpactor.auth import (
    AuthorizationCodeGrant,
    DPoPKey,
    FileTokenStorage,
    HeadlessRedirectHandler,
    OAuthClient,
)
from mcpactor.protocol.errors import RequestError

MODES = ["auto", "legacy"]


def _client(url: str, **options: Any) -> OAuthClient:
    return OAuthClient(url, grant=AuthorizationCodeGrant(HeadlessRedirectHandler()), **options)


async def _add(url: str, auth: OAuthClient, *, mode: str = "auto", calls: int = 1) -> None:
    async with connect_http(url, auth=auth, timeout=10, mode=mode) as client:
        for i in range(calls):
            result = await client.call_tool("add", {"a": i, "b": 1})
            assert result.content[0].text == str(i + 1)  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_a_dpop_only_server_gets_dpop_bound_tokens_and_fresh_proofs(mode: str) -> None:
    with trio.fail_after(30):
        async with ext_stack() as st:
            auth = _client(st.mcp_url)
            await _add(st.mcp_url, auth, mode=mode, calls=3)
            key = auth.dpop.key
            assert key is not None and key.alg == "ES256"
            # The token request carried a valid proof of this key; the code was bound
            # to it too (dpop_jkt), and the token came back DPoP-bound.
            [authz] = st.auth.requests("/authorize")
            assert authz.query["dpop_jkt"] == key.thumbprint
            [tok] = st.auth.token_requests
            assert tok.status == 200 and tok.jkt == key.thumbprint
            assert tok.proof_claims is not None and "ath" not in tok.proof_claims
            # Every request after it: scheme DPoP, its own valid proof (the gate refuses
            # replayed jtis, wrong htm/htu/ath or another key), nothing refused.
            judged = [j for j in st.gate.judged if j.scheme is not None]
            assert judged and all(j.verdict == "ok" and j.scheme == "DPoP" for j in judged)
            assert [j.verdict for j in st.gate.judged].count("no token") == 1
            jtis = [j.claims["jti"] for j in judged if j.claims]
            assert len(jtis) == len(set(jtis)) == len(judged)
            assert {j.method for j in judged} >= {"POST"}


async def test_nonces_from_both_servers_are_used_and_followed() -> None:
    with trio.fail_after(30):
        auth_server = ExtAuthServer(dpop_algs=["ES256"], require_nonce=True)
        async with ext_stack(auth=auth_server, require_nonce=True, rotate_after=2) as st:
            auth = _client(st.mcp_url)
            await _add(st.mcp_url, auth, calls=5)
            # The token endpoint: refused for want of its nonce once, then granted.
            reqs = st.auth.token_requests
            assert [(r.status, r.error) for r in reqs] == [(400, "use_dpop_nonce"), (200, None)]
            assert reqs[0].proof_claims is not None and "nonce" not in reqs[0].proof_claims
            assert reqs[1].proof_claims is not None
            assert reqs[1].proof_claims["nonce"] == auth_server.nonce
            # The resource server: one use_dpop_nonce challenge, then every proof has
            # the nonce in force; the nonces it rotated in on success answers were
            # followed without another challenge.
            verdicts = [j.verdict for j in st.gate.judged]
            assert verdicts.count("use_dpop_nonce") == 1
            assert verdicts.count("no token") == 1
            assert len(st.gate.nonces_issued) >= 3
            used = [j.claims["nonce"] for j in st.gate.judged if j.verdict == "ok" and j.claims]
            assert set(used) == set(st.gate.nonces_issued[:len(set(used))])
            assert len(set(used)) >= 3
            # Nonce retries are not authorizations: one authorization request in all.
            assert len(st.auth.requests("/authorize")) == 1


async def test_a_dpop_bound_token_is_refreshed_with_a_proof() -> None:
    with trio.fail_after(30):
        async with ext_stack(auth=ExtAuthServer(dpop_algs=["ES256"])) as st:
            auth = _client(st.mcp_url)
            await _add(st.mcp_url, auth)
            # An hour later, from the client's view: expired.
            auth.clock = lambda: 10.0**10
            await _add(st.mcp_url, auth)
            kinds = [r.form["grant_type"] for r in st.auth.token_requests]
            assert kinds == ["authorization_code", "refresh_token"]
            key = auth.dpop.key
            assert key is not None
            assert all(r.jkt == key.thumbprint and r.status == 200 for r in st.auth.token_requests)


async def test_never_against_a_dpop_only_server_is_a_clear_error() -> None:
    with trio.fail_after(30):
        async with ext_stack() as st:
            auth = _client(st.mcp_url, dpop="never")
            with pytest.raises(RequestError, match="dpop='never'"):
                await _add(st.mcp_url, auth)
            assert st.auth.token_requests == []


async def test_always_refuses_a_bearer_token() -> None:
    with trio.fail_after(30):
        # An authorization server that takes no notice of DPoP (issues Bearer tokens).
        plain = ExtAuthServer(dpop_algs=None, bind=False)
        async with ext_stack(auth=plain, schemes=("Bearer",)) as st:
            with pytest.raises(RequestError, match="issued a Bearer token"):
                await _add(st.mcp_url, _client(st.mcp_url, dpop="always"))
            # auto: the resource never asked for DPoP, so plain Bearer, no proofs.
            await _add(st.mcp_url, _client(st.mcp_url))
            last = st.auth.token_requests[-1]
            assert last.status == 200 and last.proof_claims is None
            assert all(j.scheme in (None, "Bearer") for j in st.gate.judged)


async def test_a_server_offering_both_gets_dpop_in_auto_and_bearer_in_never() -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer", "DPoP")) as st:
            await _add(st.mcp_url, _client(st.mcp_url))
            await _add(st.mcp_url, _client(st.mcp_url, dpop="never"))
            schemes = [j.scheme for j in st.gate.judged if j.verdict == "ok"]
            assert "DPoP" in schemes and "Bearer" in schemes
            assert [r.jkt is not None for r in st.auth.token_requests] == [True, False]


async def test_a_given_key_and_the_servers_algorithms() -> None:
    with trio.fail_after(30):
        async with ext_stack(auth=ExtAuthServer(dpop_algs=["EdDSA"])) as st:
            # A generated key follows what the servers take.
            auth = _client(st.mcp_url)
            await _add(st.mcp_url, auth)
            assert auth.dpop.key is not None and auth.dpop.key.alg == "EdDSA"
            # A given key the authorization server cannot take: said before any token
            # request.
            before = len(st.auth.token_requests)
            with pytest.raises(RequestError, match="not with this client's ES256 key"):
                await _add(st.mcp_url, _client(st.mcp_url, dpop_key=DPoPKey.generate("ES256")))
            assert len(st.auth.token_requests) == before


async def test_a_kept_key_keeps_stored_tokens_usable(tmp_path: Any) -> None:
    with trio.fail_after(30):
        async with ext_stack() as st:
            pem = DPoPKey.generate().private_pem()
            storage = FileTokenStorage(tmp_path / "tokens.json")
            await _add(st.mcp_url, _client(st.mcp_url, storage=storage,
                                           dpop_key=DPoPKey.from_pem(pem)))
            assert len(st.auth.token_requests) == 1
            # Another process, the same key from its PEM: the stored token is used.
            await _add(st.mcp_url, _client(st.mcp_url, storage=storage,
                                           dpop_key=DPoPKey.from_pem(pem)))
            assert len(st.auth.token_requests) == 1
            # A client with a fresh key cannot use that token: it authorizes anew and
            # never presents the old one.
            before = len(st.gate.judged)
            await _add(st.mcp_url, _client(st.mcp_url, storage=storage))
            assert len(st.auth.token_requests) == 2
            later = [j.verdict for j in st.gate.judged[before:]]
            assert later[0] == "no token" and set(later[1:]) == {"ok"}


async def test_proofs_are_checked_by_the_gate_for_real() -> None:
    """The gate refuses what it should: the same proof twice, a proof by another key."""
    with trio.fail_after(30):
        async with ext_stack() as st:
            auth = _client(st.mcp_url)
            await _add(st.mcp_url, auth)
            token = await auth.access_token()
            assert token is not None
            headers, _ = await auth.authorization_headers("POST", st.mcp_url)
            proof = dict(headers)["dpop"]
            verify_proof(proof, "POST", st.mcp_url, access_token=token)
            judge = st.gate._judge
            ok = {"authorization": f"DPoP {token}", "dpop": proof}
            assert judge("POST", ok)[0] == "ok"
            assert judge("POST", ok)[0] == "invalid_dpop_proof: jti replayed"
            other = _client(st.mcp_url, dpop="always", dpop_key=DPoPKey.generate())
            other._tokens, other._loaded = auth._tokens, True
            stolen, _ = await other.authorization_headers("POST", st.mcp_url)
            assert judge("POST", dict(stolen))[0] == "invalid_dpop_proof: another key"
            assert judge("POST", {"authorization": f"Bearer {token}"})[0] == "invalid_token"
