"""The sans-I/O parts of mcpactor.auth: WWW-Authenticate parsing, metadata URLs, the
canonical resource URI, PKCE, scope merging, token parsing, storage, client auth."""

from __future__ import annotations

import base64
import os
import re
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from oauth_stub import pkce_s256

from mcpactor.auth.challenge import bearer_challenge, find_bearer, parse_www_authenticate
from mcpactor.auth.client_flow import merge_scopes
from mcpactor.auth.metadata import (
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    authorization_server_metadata_urls,
    canonical_resource,
    is_secure_endpoint,
    legacy_metadata_urls,
    protected_resource_metadata_urls,
    resource_matches,
)
from mcpactor.auth.pkce import new_pkce, new_state
from mcpactor.auth.redirect import parse_authorization_response
from mcpactor.auth.registration import ClientConfig, choose_auth_method
from mcpactor.auth.storage import ClientInfo, FileTokenStorage, InMemoryTokenStorage, TokenSet
from mcpactor.auth.token_endpoint import authenticate
from mcpactor.transports.security import redact_headers, redact_target

# -- WWW-Authenticate -----------------------------------------------------------------


def test_parse_bearer_with_quoted_params() -> None:
    [ch] = parse_www_authenticate(
        'Bearer realm="mcp", error="insufficient_scope", scope="a b", '
        'resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp"')
    assert ch.is_bearer and ch.params["realm"] == "mcp"
    assert ch.error == "insufficient_scope" and ch.scope == "a b"
    assert ch.resource_metadata == "https://x.example/.well-known/oauth-protected-resource/mcp"


def test_parse_several_challenges_token68_and_escapes() -> None:
    chs = parse_www_authenticate(
        'Basic YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer error=invalid_token, '
        'error_description="say \\"hi\\", then go", Newauth realm="apps", type=1')
    assert [c.scheme for c in chs] == ["Basic", "Bearer", "Newauth"]
    assert chs[0].token68 == "YWxhZGRpbjpvcGVuc2VzYW1l=="
    assert chs[1].params == {"error": "invalid_token", "error_description": 'say "hi", then go'}
    assert chs[2].params == {"realm": "apps", "type": "1"}


def test_parse_is_lenient_and_case_insensitive() -> None:
    assert parse_www_authenticate("") == []
    [ch] = parse_www_authenticate("bearer")
    assert ch.is_bearer and ch.params == {} and ch.scope is None
    ch2 = find_bearer('Digest realm="x", BEARER Scope="s1"')
    assert ch2 is not None and ch2.scope == "s1"
    assert find_bearer("Basic realm=x") is None
    assert find_bearer(None) is None
    # junk does not loop or raise
    assert parse_www_authenticate(';;, ="x" Bearer a="unterminated')[-1].params == {"a": "unterminated"}


def test_build_challenge_round_trips() -> None:
    header = bearer_challenge(error="invalid_token", error_description='bad "quote"',
                              resource_metadata="https://h/.well-known/x", scope=None)
    assert "scope" not in header
    ch = find_bearer(header)
    assert ch is not None and ch.params["error_description"] == 'bad "quote"'
    assert bearer_challenge() == "Bearer"


# -- metadata URLs --------------------------------------------------------------------


def test_protected_resource_metadata_urls() -> None:
    assert protected_resource_metadata_urls("https://Mcp.Example.com/public/mcp") == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("http://h:8080/") == [
        "http://h:8080/.well-known/oauth-protected-resource"]


def test_authorization_server_metadata_urls() -> None:
    assert authorization_server_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://auth.example.com/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]
    assert legacy_metadata_urls("http://h:1/some/mcp") == [
        "http://h:1/.well-known/oauth-authorization-server"]


def test_canonical_resource_and_matching() -> None:
    assert canonical_resource("HTTPS://MCP.Example.COM:443/mcp#frag") == "https://mcp.example.com/mcp"
    assert canonical_resource("https://mcp.example.com/") == "https://mcp.example.com"
    assert canonical_resource("http://[::1]:8000/mcp?x=1") == "http://[::1]:8000/mcp"
    assert resource_matches("http://h:1/mcp", "http://h:1/mcp")
    assert resource_matches("http://h:1/mcp", "http://h:1")
    assert resource_matches("http://h:1/mcp/", "HTTP://H:1/mcp")
    assert not resource_matches("http://h:1/mcp", "https://evil.example.com/mcp")
    assert not resource_matches("http://h:1/mcp", "http://h:2/mcp")
    assert not resource_matches("http://h:1/mcpx", "http://h:1/mcp")
    assert not resource_matches("http://h:1/mcp", "not a url")
    with pytest.raises(ValueError):
        canonical_resource("mcp.example.com")


def test_metadata_documents_validate() -> None:
    prm = ProtectedResourceMetadata.from_json(
        {"resource": "https://r", "authorization_servers": ["https://a"], "scopes_supported": ["x"]})
    assert prm.to_json()["bearer_methods_supported"] == ["header"]
    for bad in ({}, {"resource": "https://r"}, {"resource": "https://r", "authorization_servers": []}, []):
        with pytest.raises(ValueError):
            ProtectedResourceMetadata.from_json(bad)
    asm = AuthorizationServerMetadata.from_json(
        {"issuer": "https://a", "token_endpoint": "https://a/t", "client_id_metadata_document_supported": True})
    assert asm.client_id_metadata_document_supported and asm.authorization_endpoint is None
    with pytest.raises(ValueError):
        AuthorizationServerMetadata.from_json({"issuer": "https://a"})
    legacy = AuthorizationServerMetadata.legacy_defaults("http://h:3/mcp")
    assert (legacy.authorization_endpoint, legacy.token_endpoint, legacy.registration_endpoint) == (
        "http://h:3/authorize", "http://h:3/token", "http://h:3/register")


# -- PKCE, state, scopes ----------------------------------------------------------------


def test_pkce_pairs() -> None:
    seen = set()
    for _ in range(20):
        p = new_pkce()
        assert 43 <= len(p.verifier) <= 128
        assert re.fullmatch(r"[A-Za-z0-9._~-]+", p.verifier)
        assert p.challenge == pkce_s256(p.verifier) and p.method == "S256"
        assert "=" not in p.challenge
        assert p.verifier not in repr(p)
        seen.add(p.verifier)
    assert len(seen) == 20
    assert new_state() != new_state()


def test_merge_scopes() -> None:
    assert merge_scopes("a b", "b c", None) == "a b c"
    assert merge_scopes(None, "") is None


def test_authorization_response_parsing() -> None:
    r = parse_authorization_response("http://127.0.0.1:9/cb?code=abc&state=s1&iss=https%3A%2F%2Fa")
    assert (r.code, r.state, r.iss) == ("abc", "s1", "https://a") and "abc" not in repr(r)
    with pytest.raises(Exception, match="access_denied"):
        parse_authorization_response("http://x/cb?error=access_denied&state=s")
    with pytest.raises(Exception, match="no code"):
        parse_authorization_response("http://x/cb?state=s")


# -- tokens and storage -------------------------------------------------------------------


def test_token_set_parsing_and_rotation() -> None:
    t = TokenSet.from_response({"access_token": "A", "token_type": "bearer", "expires_in": 60,
                                "refresh_token": "R", "scope": "x"}, now=1000.0)
    assert t.expires_at == 1060.0 and not t.expired(1000.0) and t.expired(1031.0)
    kept = TokenSet.from_response({"access_token": "B", "token_type": "Bearer"}, previous=t)
    assert kept.refresh_token == "R" and kept.expires_at is None
    rotated = TokenSet.from_response({"access_token": "C", "refresh_token": "R2"}, previous=t)
    assert rotated.refresh_token == "R2"
    secret = TokenSet(access_token="acc-3f9a", refresh_token="ref-77c1")
    assert "acc-3f9a" not in repr(secret) and "ref-77c1" not in repr(secret)
    for bad in ({}, {"access_token": "x", "token_type": "mac"}, None):
        with pytest.raises(ValueError):
            TokenSet.from_response(bad)


async def test_in_memory_storage() -> None:
    s = InMemoryTokenStorage()
    assert await s.get_tokens("r") is None
    await s.set_tokens("r", TokenSet(access_token="a"))
    await s.set_client("i", ClientInfo(client_id="c", client_secret="sec"))
    assert (await s.get_tokens("r")) == TokenSet(access_token="a")
    assert (await s.get_client("i")) == ClientInfo(client_id="c", client_secret="sec")
    await s.set_tokens("r", None)
    assert await s.get_tokens("r") is None


async def test_file_storage_is_private_and_persistent(tmp_path: Any) -> None:
    path = tmp_path / "auth.json"
    s = FileTokenStorage(path)
    await s.set_tokens("https://r/mcp", TokenSet(access_token="a", refresh_token="b", expires_at=5.0))
    await s.set_client("https://a", ClientInfo(client_id="c", client_secret="sec",
                                               token_endpoint_auth_method="client_secret_post"))
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = FileTokenStorage(path)
    assert await again.get_tokens("https://r/mcp") == TokenSet(access_token="a", refresh_token="b", expires_at=5.0)
    client = await again.get_client("https://a")
    assert client is not None and client.client_secret == "sec"
    await again.set_tokens("https://r/mcp", None)
    assert await s.get_tokens("https://r/mcp") is None
    assert [p.name for p in tmp_path.iterdir()] == ["auth.json"]  # no temp files left


# -- client authentication ------------------------------------------------------------------


def _asm(methods: list[str] | None) -> AuthorizationServerMetadata:
    return AuthorizationServerMetadata(issuer="https://as.example", token_endpoint="https://as.example/t",
                                       token_endpoint_auth_methods_supported=methods)


def test_choose_auth_method() -> None:
    cfg = ClientConfig()
    secret = ClientInfo(client_id="c", client_secret="s")
    assert choose_auth_method(secret, _asm(["client_secret_post"]), cfg) == "client_secret_post"
    assert choose_auth_method(secret, _asm(None), cfg) == "client_secret_basic"
    assert choose_auth_method(ClientInfo(client_id="c"), _asm(["client_secret_basic"]), cfg) == "none"
    registered = ClientInfo(client_id="c", client_secret="s", token_endpoint_auth_method="client_secret_post")
    assert choose_auth_method(registered, _asm(["client_secret_basic"]), cfg) == "client_secret_post"


def test_client_authentication_forms() -> None:
    client = ClientInfo(client_id="id:1", client_secret="p@ss word")
    form: dict[str, str] = {}
    [(name, value)] = authenticate("client_secret_basic", client, _asm(None), form)
    assert name == "authorization" and form == {}
    assert base64.b64decode(value[6:]).decode() == "id%3A1:p%40ss%20word"
    form = {}
    assert authenticate("client_secret_post", client, _asm(None), form) == []
    assert form == {"client_id": "id:1", "client_secret": "p@ss word"}
    form = {}
    authenticate("none", client, _asm(None), form)
    assert form == {"client_id": "id:1"}


def test_private_key_jwt_assertion() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    form: dict[str, str] = {}
    authenticate("private_key_jwt", ClientInfo(client_id="m"), _asm(None), form,
                 private_key_pem=pem, algorithm="ES256")
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    claims = jwt.decode(form["client_assertion"], key.public_key(), algorithms=["ES256"],
                        audience="https://as.example")
    assert claims["iss"] == claims["sub"] == "m" and claims["exp"] > claims["iat"]


# -- redaction helpers -----------------------------------------------------------------------


def test_redaction_helpers() -> None:
    assert redact_target("/mcp?access_token=abc&x=1&code=zz") == "/mcp?access_token=<redacted>&x=1&code=<redacted>"
    assert redact_target(b"/cb?state=s") == "/cb?state=s"
    assert redact_headers([(b"Authorization", b"Bearer t"), (b"accept", b"*/*")]) == [
        ("Authorization", "<redacted>"), ("accept", "*/*")]
    # A DPoP proof is a credential too (it carries the token's hash and is replayable).
    assert redact_headers([(b"DPoP", b"eyJ.proof.sig")]) == [("DPoP", "<redacted>")]
    cfg = ClientConfig(client_id="c", client_secret="topsecret", private_key_pem="PEMDATA")
    assert "topsecret" not in repr(cfg) and "PEMDATA" not in repr(cfg)
    assert "s3cr3t-v4lue" not in repr(ClientInfo(client_id="c", client_secret="s3cr3t-v4lue"))


# -- client id and scope choices ---------------------------------------------------------


async def test_client_id_sources_in_order() -> None:
    from mcpactor.auth.errors import AuthorizationError
    from mcpactor.auth.httpio import OAuthHttp
    from mcpactor.auth.registration import obtain_client

    http = OAuthHttp()
    cimd = AuthorizationServerMetadata(issuer="https://a", token_endpoint="https://a/t",
                                       client_id_metadata_document_supported=True)
    url = "https://app.example/client.json"
    pre = await obtain_client(http, cimd, ClientConfig(client_id="pre", client_secret="s",
                                                       client_metadata_url=url), None, [])
    assert (pre.client_id, pre.client_secret) == ("pre", "s")
    doc = await obtain_client(http, cimd, ClientConfig(client_metadata_url=url), None, [])
    assert doc.client_id == url and doc.token_endpoint_auth_method == "none"
    bare = AuthorizationServerMetadata(issuer="https://a", token_endpoint="https://a/t")
    with pytest.raises(AuthorizationError, match="no client id"):
        await obtain_client(http, bare, ClientConfig(client_metadata_url=url), None, [])
    await http.aclose()


def test_scope_selection_strategy() -> None:
    from mcpactor.auth.client_flow import OAuthClient

    c = OAuthClient("http://127.0.0.1:1/mcp")
    c.asm = AuthorizationServerMetadata(issuer="https://a", token_endpoint="https://a/t",
                                        scopes_supported=["x", "offline_access"])
    c.prm = ProtectedResourceMetadata(resource="http://127.0.0.1:1/mcp",
                                      authorization_servers=["https://a"], scopes_supported=["r", "w"])
    assert c._select_scope(find_bearer('Bearer scope="only"')) == "only offline_access"
    assert c._select_scope(find_bearer("Bearer")) == "r w offline_access"
    c.prm = ProtectedResourceMetadata(resource="http://127.0.0.1:1/mcp", authorization_servers=["https://a"])
    assert c._select_scope(None) is None  # nothing known: no scope parameter at all
    c.asm = AuthorizationServerMetadata(issuer="https://a", token_endpoint="https://a/t",
                                        scopes_supported=["x"])
    assert c._select_scope(find_bearer('Bearer scope="only"')) == "only"


def test_authorization_servers_must_use_https_off_loopback() -> None:
    assert is_secure_endpoint("https://as.example/token")
    assert is_secure_endpoint("http://localhost:3000/token")
    assert is_secure_endpoint("http://127.0.0.1/token") and is_secure_endpoint("http://[::1]:1/t")
    assert not is_secure_endpoint("http://as.example/token")
    assert not is_secure_endpoint("ftp://as.example/token")
