"""DPoP proofs (RFC 9449) as mcpactor.auth makes them, checked by a verifier written
apart from it (tests/auth/ext_stub.py: `cryptography` from the JWK in the header), by
PyJWT, and against the RFCs' own examples; and the client-side rules around them."""

from __future__ import annotations

import hashlib
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from ext_stub import ProofError, b64d, b64e, thumbprint, verify_proof

from mcpactor.auth import DPoPKey, OAuthClient
from mcpactor.auth.challenge import find_challenge
from mcpactor.auth.dpop import (
    SUPPORTED_ALGORITHMS,
    access_token_hash,
    jwk_thumbprint,
    make_proof,
    proof_htu,
)
from mcpactor.auth.dpop_signer import DPoPSigner
from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.metadata import AuthorizationServerMetadata, ProtectedResourceMetadata
from mcpactor.auth.storage import TokenSet

URL = "https://mcp.example.com/mcp"


@pytest.fixture(scope="module")
def keys() -> dict[str, DPoPKey]:
    """One key per algorithm (RSA generation is slow: once per module)."""
    return {alg: DPoPKey.generate(alg) for alg in SUPPORTED_ALGORITHMS}


@pytest.mark.parametrize("alg", SUPPORTED_ALGORITHMS)
def test_a_proof_verifies_independently_for_every_algorithm(
        keys: dict[str, DPoPKey], alg: str) -> None:
    key = keys[alg]
    proof = make_proof(key, "post", URL + "?x=1#frag", access_token="tok-123", nonce="n-1")
    header, claims = verify_proof(proof, "POST", URL, access_token="tok-123", nonce="n-1")
    assert header["typ"] == "dpop+jwt" and header["alg"] == alg
    assert thumbprint(header["jwk"]) == key.thumbprint  # our RFC 7638 = theirs
    assert claims["htm"] == "POST" and claims["htu"] == URL  # no query, no fragment
    assert abs(claims["iat"] - time.time()) < 5
    assert claims["ath"] == b64e(hashlib.sha256(b"tok-123").digest())
    assert claims["nonce"] == "n-1"
    # PyJWT agrees, from the same public JWK.
    decoded = jwt.decode(proof, jwt.PyJWK(header["jwk"], algorithm=alg).key, algorithms=[alg])
    assert decoded == claims


def test_the_public_jwk_holds_no_private_member(keys: dict[str, DPoPKey]) -> None:
    for key in keys.values():
        assert set(key.public_jwk) <= {"kty", "crv", "x", "y", "n", "e"}
        assert "PRIVATE" not in repr(key) and key.thumbprint in repr(key)


def test_each_proof_is_fresh_and_tampering_is_caught(keys: dict[str, DPoPKey]) -> None:
    key = keys["ES256"]
    a, b = make_proof(key, "GET", URL), make_proof(key, "GET", URL)
    seen: set[str] = set()
    _, ca = verify_proof(a, "GET", URL, seen_jtis=seen)
    _, cb = verify_proof(b, "GET", URL, seen_jtis=seen)
    assert ca["jti"] != cb["jti"] and "ath" not in ca and "nonce" not in ca
    with pytest.raises(ProofError, match="replayed"):
        verify_proof(a, "GET", URL, seen_jtis=seen)
    with pytest.raises(ProofError, match="htm"):
        verify_proof(a, "POST", URL)
    with pytest.raises(ProofError, match="htu"):
        verify_proof(a, "GET", URL + "/other")
    head, body, sig = a.split(".")
    forged = body[:-2] + ("AA" if body[-2:] != "AA" else "BB")
    with pytest.raises(ProofError):
        verify_proof(f"{head}.{forged}.{sig}", "GET", URL)
    with pytest.raises(ProofError, match="ath"):
        verify_proof(make_proof(key, "GET", URL, access_token="a"), "GET", URL,
                     access_token="b")


def test_known_answers_from_the_rfcs() -> None:
    # RFC 9449 §7.1: the example access token and its ath.
    assert access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU") \
        == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    # RFC 7638 §3.1: the example RSA key's thumbprint (extra members ignored).
    jwk = {
        "kty": "RSA", "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1"
             "L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4"
             "QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbO"
             "pbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csF"
             "Cur-kEgU8awapJzKnqDKgw",
    }
    assert jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_htu_drops_query_and_fragment_only() -> None:
    assert proof_htu("https://h.example:8443/a/b?c=d#e") == "https://h.example:8443/a/b"
    with pytest.raises(ValueError, match="absolute URL"):
        proof_htu("/mcp")


def test_keys_load_from_pem_with_the_algorithm_their_type_implies(
        keys: dict[str, DPoPKey]) -> None:
    for alg, key in keys.items():
        pem = key.private_pem()
        loaded = DPoPKey.from_pem(pem, alg if alg[:2] in ("RS", "PS") else None)
        assert loaded.thumbprint == key.thumbprint and loaded.alg == alg
    assert DPoPKey.from_pem(keys["RS256"].private_pem()).alg == "PS256"


def test_bad_keys_and_algorithms_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unsupported DPoP algorithm 'HS256'; choose one of"):
        DPoPKey.generate("HS256")
    with pytest.raises(ValueError, match="cannot load the DPoP private key"):
        DPoPKey.from_pem("not a pem")
    p384 = ec.generate_private_key(ec.SECP384R1())
    with pytest.raises(ValueError, match="ES256 needs an EC private key on curve P-256"):
        DPoPKey(p384, "ES256")
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = small.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    with pytest.raises(ValueError, match="at least 2048 bits"):
        DPoPKey.from_pem(pem)


def test_client_options_are_checked_when_made(keys: dict[str, DPoPKey]) -> None:
    with pytest.raises(ValueError, match="dpop='sometimes': use one of 'auto', 'always', 'never'"):
        OAuthClient(URL, dpop="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dpop_key must be a DPoPKey"):
        OAuthClient(URL, dpop_key="-----BEGIN PRIVATE KEY-----")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dpop_key was given with dpop='never'"):
        OAuthClient(URL, dpop="never", dpop_key=keys["ES256"])


def _asm(algs: list[str] | None) -> AuthorizationServerMetadata:
    return AuthorizationServerMetadata(issuer="https://as.example", token_endpoint="https://as.example/t",
                                       dpop_signing_alg_values_supported=algs)


def test_when_a_token_is_bound() -> None:
    auto = DPoPSigner("auto")
    assert auto.for_token_request(_asm(["ES256"])) is None  # the resource never asked
    auto.note_challenge('Bearer resource_metadata="x", DPoP algs="PS256 ES256"')
    assert auto.resource_accepts and not auto.resource_requires
    key = auto.for_token_request(_asm(["PS256", "ES256", "RS256"]))
    assert key is not None and key.alg == "ES256"  # both servers take it, and it is small
    assert auto.for_token_request(_asm(None)) is key  # one key per client
    only = DPoPSigner("auto")
    only.note_challenge('DPoP algs="PS256"')
    assert only.resource_requires and only.bearer_refused
    only_key = only.for_token_request(_asm(["ES256", "PS256"]))
    assert only_key is not None and only_key.alg == "PS256"
    prm = DPoPSigner("auto")
    prm.note_resource_metadata(ProtectedResourceMetadata.from_json(
        {"resource": URL, "authorization_servers": ["https://as.example"],
         "dpop_bound_access_tokens_required": True}))
    assert prm.resource_requires and prm.for_token_request(_asm(None)) is not None
    never = DPoPSigner("never")
    never.note_challenge('DPoP error="invalid_token"')
    with pytest.raises(AuthorizationError, match="accepts only DPoP-bound access tokens"):
        never.for_token_request(_asm(["ES256"]))
    always = DPoPSigner("always", DPoPKey.generate("EdDSA"))
    assert always.bearer_refused
    with pytest.raises(AuthorizationError, match="not with this client's EdDSA key"):
        always.for_token_request(_asm(["ES256"]))
    with pytest.raises(AuthorizationError, match="this client can sign with"):
        DPoPSigner("always").for_token_request(_asm(["HS256"]))


def test_nonces_are_kept_per_origin() -> None:
    signer = DPoPSigner("always", DPoPKey.generate())
    assert signer.note_nonce("https://a.example/token", {"dpop-nonce": "n1"})
    assert not signer.note_nonce("https://a.example/other", {"dpop-nonce": "n1"})  # not new
    assert not signer.note_nonce("https://a.example/token", {})
    _, claims = verify_proof(signer.proof("POST", "https://a.example/x"), "POST",
                             "https://a.example/x")
    assert claims["nonce"] == "n1"
    _, other = verify_proof(signer.proof("POST", "https://b.example/x"), "POST",
                            "https://b.example/x")
    assert "nonce" not in other
    # A token endpoint on the same origin keeps its own nonce.
    token = "https://a.example/oauth/token?x=1"
    assert "nonce" not in verify_proof(signer.proof("POST", token, endpoint=True), "POST",
                                       token)[1]
    assert signer.note_nonce(token, {"dpop-nonce": "as-1"}, endpoint=True)
    assert verify_proof(signer.proof("POST", token, endpoint=True), "POST",
                        token)[1]["nonce"] == "as-1"
    assert verify_proof(signer.proof("GET", "https://a.example/mcp"), "GET",
                        "https://a.example/mcp")[1]["nonce"] == "n1"
    challenge = {"www-authenticate": 'DPoP error="use_dpop_nonce"', "dpop-nonce": "n2"}
    assert DPoPSigner.is_nonce_challenge(401, challenge)
    assert not DPoPSigner.is_nonce_challenge(403, challenge)
    assert not DPoPSigner.is_nonce_challenge(401, {"www-authenticate": challenge["www-authenticate"]})
    assert not DPoPSigner.is_nonce_challenge(
        401, {"www-authenticate": 'Bearer error="use_dpop_nonce"', "dpop-nonce": "n2"})


def test_token_responses_and_challenges() -> None:
    bound = TokenSet.from_response({"access_token": "t", "token_type": "DPoP"}, dpop_jkt="jkt")
    assert bound.token_type == "DPoP" and bound.dpop_jkt == "jkt"
    plain = TokenSet.from_response({"access_token": "t", "token_type": "bearer"}, dpop_jkt="jkt")
    assert plain.token_type == "Bearer" and plain.dpop_jkt is None
    with pytest.raises(ValueError, match="no DPoP proof"):
        TokenSet.from_response({"access_token": "t", "token_type": "DPoP"})
    header = 'Bearer scope="a", DPoP algs="ES256", scope="b"'
    first = find_challenge(header)
    dpop = find_challenge(header, prefer="dpop")
    assert first is not None and first.scope == "a"
    assert dpop is not None and dpop.scope == "b"
    only = find_challenge('DPoP resource_metadata="m"')
    assert only is not None and only.resource_metadata == "m"
    assert find_challenge('Basic realm="x"') is None


def test_ec_coordinates_keep_their_full_length() -> None:
    # RFC 7518 §6.2.1.2: x and y are the curve's full size even with leading zero
    # bytes (strict verifiers refuse a short one). One key in 256 has such an x.
    for _ in range(20000):
        private = ec.generate_private_key(ec.SECP256R1())
        if private.public_key().public_numbers().x.bit_length() <= 248:
            break
    else:
        pytest.fail("no key with a short x coordinate found")
    key = DPoPKey(private, "ES256")
    assert len(b64d(key.public_jwk["x"])) == 32 and len(b64d(key.public_jwk["y"])) == 32
    verify_proof(make_proof(key, "GET", URL), "GET", URL)


def test_without_the_extra_dpop_is_skipped_or_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpactor.auth import dpop_signer
    from mcpactor.extras import MissingExtra

    def missing(alg: str = "ES256") -> DPoPKey:
        raise MissingExtra("DPoP needs cryptography, which is not installed: "
                           "pip install 'mcpactor[auth]'")

    monkeypatch.setattr(dpop_signer.DPoPKey, "generate", missing)
    offered = DPoPSigner("auto")
    offered.note_challenge('Bearer realm="x", DPoP algs="ES256"')
    assert offered.for_token_request(_asm(["ES256"])) is None  # Bearer will do
    required = DPoPSigner("auto")
    required.note_challenge('DPoP algs="ES256"')
    with pytest.raises(AuthorizationError, match=r"pip install 'mcpactor\[auth\]'"):
        required.for_token_request(_asm(["ES256"]))
    with pytest.raises(AuthorizationError, match="DPoP needs cryptography"):
        DPoPSigner("always").for_token_request(_asm(None))
