"""DPoP (RFC 9449) keys and proofs, sans-I/O: what the MCP DPoP extension (SEP-1932)
asks of a client.

A :class:`DPoPKey` is the client's key pair; :func:`make_proof` signs a proof JWT for one
HTTP request (``typ`` ``dpop+jwt``, the public key as ``jwk``; ``jti``, ``htm``, ``htu``,
``iat``, plus ``ath`` when an access token goes with it and ``nonce`` when a server
asked for one). The signatures are `cryptography`'s (``mcpactor[auth]``); nothing here
does I/O, so a proof can be checked byte for byte in tests.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import orjson

from mcpactor.extras import MissingExtra

__all__ = [
    "SUPPORTED_ALGORITHMS",
    "DPoPKey",
    "access_token_hash",
    "b64url",
    "jwk_thumbprint",
    "make_proof",
    "proof_htu",
]

#: The JWS algorithms a :class:`DPoPKey` can sign with, in the order we prefer them
#: when a server lets us choose (small fast keys first).
SUPPORTED_ALGORITHMS: Final = (
    "ES256", "EdDSA", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512",
)

#: ES algorithm → (JWK ``crv``, coordinate size in bytes).
_EC_CURVES: Final = {"ES256": ("P-256", 32), "ES384": ("P-384", 48), "ES512": ("P-521", 66)}
#: JWK ``crv`` → the curve's name in `cryptography`.
_CURVE_NAMES: Final = {"P-256": "secp256r1", "P-384": "secp384r1", "P-521": "secp521r1"}
#: ES algorithm → the curve's name in `cryptography`.
_CURVE_ALGS: Final = {alg: _CURVE_NAMES[crv] for alg, (crv, _) in _EC_CURVES.items()}


def _is_rsa(alg: str) -> bool:
    return alg in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")


def _unsupported(alg: str) -> str:
    return (f"unsupported DPoP algorithm {alg!r}; "
            f"choose one of {', '.join(SUPPORTED_ALGORITHMS)}")


def _need_crypto() -> None:
    """`cryptography` is an extra (``mcpactor[auth]``): imported only when DPoP is used,
    and its absence named with the fix."""
    try:
        import cryptography  # noqa: F401
    except ImportError as exc:
        raise MissingExtra("DPoP needs cryptography, which is not installed: "
                           "pip install 'mcpactor[auth]'") from exc


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _uint(n: int, size: int | None = None) -> str:
    """An unsigned big-endian integer, base64url (RFC 7518 §6.2/6.3)."""
    length = size if size is not None else max(1, (n.bit_length() + 7) // 8)
    return b64url(n.to_bytes(length, "big"))


def jwk_thumbprint(jwk: dict[str, str]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK: its required members only, in
    lexicographic order, no whitespace. DPoP's ``jkt`` (``cnf.jkt``, ``dpop_jkt``)."""
    required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"),
                "OKP": ("crv", "kty", "x")}.get(jwk.get("kty", ""))
    if required is None:
        raise ValueError(f"no thumbprint for a JWK of type {jwk.get('kty')!r}")
    canonical = orjson.dumps({k: jwk[k] for k in required}, option=orjson.OPT_SORT_KEYS)
    return b64url(hashlib.sha256(canonical).digest())


def proof_htu(url: str) -> str:
    """A proof's ``htu``: the request's target URI without its query and fragment
    (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"a DPoP proof needs an absolute URL, not {url!r}")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def access_token_hash(access_token: str) -> str:
    """A proof's ``ath``: base64url(SHA-256(the token's ASCII bytes)) (RFC 9449 §4.2)."""
    return b64url(hashlib.sha256(access_token.encode("ascii")).digest())


class DPoPKey:
    """A DPoP key pair: the private key that signs proofs and its public JWK.

    Make one with :meth:`generate` (kept in memory: tokens bound to it die with the
    process) or load a kept one with :meth:`from_pem` (tokens in a
    :class:`~mcpactor.auth.FileTokenStorage` stay usable across restarts). The private
    key never appears in ``repr``.
    """

    def __init__(self, private_key: Any, alg: str) -> None:
        _need_crypto()
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        self.alg = alg
        self._key = private_key
        if alg in _EC_CURVES:
            crv, size = _EC_CURVES[alg]
            if not isinstance(private_key, ec.EllipticCurvePrivateKey) \
                    or private_key.curve.name != _CURVE_NAMES[crv]:
                raise ValueError(f"{alg} needs an EC private key on curve {crv}")
            pub = private_key.public_key().public_numbers()
            self.public_jwk: dict[str, str] = {
                "kty": "EC", "crv": crv, "x": _uint(pub.x, size), "y": _uint(pub.y, size)}
        elif alg == "EdDSA":
            if not isinstance(private_key, ed25519.Ed25519PrivateKey):
                raise ValueError("EdDSA needs an Ed25519 private key")
            raw = private_key.public_key().public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            self.public_jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw)}
        elif _is_rsa(alg):
            if not isinstance(private_key, rsa.RSAPrivateKey) or private_key.key_size < 2048:
                raise ValueError(f"{alg} needs an RSA private key of at least 2048 bits")
            rpub = private_key.public_key().public_numbers()
            self.public_jwk = {"kty": "RSA", "n": _uint(rpub.n), "e": _uint(rpub.e)}
        else:
            raise ValueError(_unsupported(alg))
        #: The RFC 7638 thumbprint of the public key (``jkt``).
        self.thumbprint = jwk_thumbprint(self.public_jwk)

    def __repr__(self) -> str:
        return f"DPoPKey(alg={self.alg!r}, jkt={self.thumbprint!r})"

    @classmethod
    def generate(cls, alg: str = "ES256") -> DPoPKey:
        """A fresh key pair for ``alg`` (ES256 by default; RSA keys are 2048 bits)."""
        _need_crypto()
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        if alg in _EC_CURVES:
            curve: ec.EllipticCurve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(),
                                       "ES512": ec.SECP521R1()}[alg]
            return cls(ec.generate_private_key(curve), alg)
        if alg == "EdDSA":
            return cls(ed25519.Ed25519PrivateKey.generate(), alg)
        if _is_rsa(alg):
            return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), alg)
        raise ValueError(_unsupported(alg))

    @classmethod
    def from_pem(cls, pem: str | bytes, alg: str | None = None, *,
                 password: bytes | None = None) -> DPoPKey:
        """Load a PEM private key. ``alg`` defaults by key type: EC P-256/384/521 →
        ES256/384/512, Ed25519 → EdDSA, RSA → PS256."""
        _need_crypto()
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        data = pem.encode("ascii") if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=password)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"cannot load the DPoP private key: {exc}") from exc
        if alg is None:
            if isinstance(key, ec.EllipticCurvePrivateKey):
                alg = {v: k for k, v in _CURVE_ALGS.items()}.get(key.curve.name)
            elif isinstance(key, ed25519.Ed25519PrivateKey):
                alg = "EdDSA"
            elif isinstance(key, rsa.RSAPrivateKey):
                alg = "PS256"
            if alg is None:
                raise ValueError("the DPoP private key is of a type DPoP cannot use "
                                 "(use EC P-256/P-384/P-521, Ed25519 or RSA)")
        return cls(key, alg)

    def private_pem(self) -> str:
        """The private key as unencrypted PKCS#8 PEM (to keep it with the tokens)."""
        from cryptography.hazmat.primitives import serialization

        pem: bytes = self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
        return pem.decode("ascii")

    def sign(self, data: bytes) -> bytes:
        """The JWS signature of ``data`` (RFC 7518: ECDSA as ``r || s``)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

        alg = self.alg
        if alg == "EdDSA":
            return bytes(self._key.sign(data))
        digest: hashes.HashAlgorithm = {"256": hashes.SHA256(), "384": hashes.SHA384(),
                                        "512": hashes.SHA512()}[alg[2:]]
        if alg in _EC_CURVES:
            size = _EC_CURVES[alg][1]
            r, s = utils.decode_dss_signature(self._key.sign(data, ec.ECDSA(digest)))
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        pad: padding.AsymmetricPadding = (
            padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
            if alg.startswith("PS") else padding.PKCS1v15())
        return bytes(self._key.sign(data, pad, digest))


def make_proof(key: DPoPKey, method: str, url: str, *, access_token: str | None = None,
               nonce: str | None = None, now: float | None = None,
               jti: str | None = None) -> str:
    """A DPoP proof JWT for one request (RFC 9449 §4.2), fresh on every call."""
    header = {"typ": "dpop+jwt", "alg": key.alg, "jwk": key.public_jwk}
    claims: dict[str, Any] = {
        # 128 random bits: a server may refuse a jti it has seen (replay protection).
        "jti": jti or secrets.token_urlsafe(16),
        "htm": method.upper(),
        "htu": proof_htu(url),
        "iat": int(time.time() if now is None else now),
    }
    if access_token is not None:
        claims["ath"] = access_token_hash(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    signing_input = f"{b64url(orjson.dumps(header))}.{b64url(orjson.dumps(claims))}"
    signature = key.sign(signing_input.encode("ascii"))
    return f"{signing_input}.{b64url(signature)}"
