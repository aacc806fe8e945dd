"""Real servers on 127.0.0.1 for the auth extensions' tests: DPoP (RFC 9449) and
workload identity federation (SEP-1933).

* :class:`ExtAuthServer`: an authorization server (ASGI, served by hypercorn): RFC 8414
  metadata, Dynamic Client Registration, an authorization endpoint that approves at
  once, and a token endpoint for ``authorization_code`` (PKCE), ``refresh_token`` and
  the JWT bearer grant (a workload's JWT, checked against a workload key). It checks
  DPoP proofs, may demand its nonce, and binds the tokens it issues (``cnf.jkt``).
* :class:`DPoPGate`: a resource server's gate in front of a real mcpactor server: it
  serves the protected resource metadata and lets a request through only with a valid
  token: ``Bearer``, or ``DPoP`` with a valid proof of that request (and its nonce).

Everything about DPoP here is checked independently of mcpactor.auth: signatures with
`cryptography` from the JWK in the proof's header, thumbprints and ``ath`` with
hashlib, so a proof mcpactor gets wrong is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode

import attrs
import jwt
import orjson
import trio
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
from oauth_stub import Seen, free_port, pkce_s256

from mcpactor import Server
from mcpactor.transports.http_server import HttpOptions, McpHttpApp

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64d(text: str) -> bytes:
    """Base64url without padding, decoded."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 SHA-256 thumbprint, computed here with json and hashlib."""
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"),
               "OKP": ("crv", "kty", "x")}[jwk["kty"]]
    canonical = json.dumps({k: jwk[k] for k in members}, sort_keys=True, separators=(",", ":"))
    return b64e(hashlib.sha256(canonical.encode()).digest())


class ProofError(Exception):
    """Why a DPoP proof is refused."""


_HASH = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_CURVES = {"P-256": (ec.SECP256R1, "ES256"), "P-384": (ec.SECP384R1, "ES384"),
           "P-521": (ec.SECP521R1, "ES512")}


def verify_signature(alg: str, jwk: dict[str, Any], signing_input: bytes, sig: bytes) -> None:
    """Check a JWS signature with `cryptography` from a public JWK; ProofError if bad."""
    try:
        if jwk["kty"] == "EC":
            curve, expected = _CURVES[jwk["crv"]]
            if alg != expected:
                raise ProofError(f"{alg} with a {jwk['crv']} key")
            pub = ec.EllipticCurvePublicNumbers(
                int.from_bytes(b64d(jwk["x"]), "big"), int.from_bytes(b64d(jwk["y"]), "big"),
                curve()).public_key()
            half = len(sig) // 2
            der = utils.encode_dss_signature(int.from_bytes(sig[:half], "big"),
                                             int.from_bytes(sig[half:], "big"))
            pub.verify(der, signing_input, ec.ECDSA(_HASH[alg[2:]]()))
        elif jwk["kty"] == "OKP":
            if alg != "EdDSA" or jwk["crv"] != "Ed25519":
                raise ProofError(f"{alg} with an OKP key")
            ed25519.Ed25519PublicKey.from_public_bytes(b64d(jwk["x"])).verify(sig, signing_input)
        elif jwk["kty"] == "RSA":
            rpub = rsa.RSAPublicNumbers(int.from_bytes(b64d(jwk["e"]), "big"),
                                        int.from_bytes(b64d(jwk["n"]), "big")).public_key()
            digest = _HASH[alg[2:]]()
            pad: padding.AsymmetricPadding = (
                padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
                if alg.startswith("PS") else padding.PKCS1v15())
            rpub.verify(sig, signing_input, pad, digest)
        else:
            raise ProofError(f"key type {jwk['kty']!r}")
    except InvalidSignature as exc:
        raise ProofError("the signature does not verify") from exc
    except (KeyError, ValueError) as exc:
        raise ProofError(f"unusable jwk: {exc!r}") from exc


def verify_proof(proof: str, method: str, url: str, *, access_token: str | None = None,
                 nonce: str | None = None, seen_jtis: set[str] | None = None,
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """RFC 9449 §4.3's checks on a proof; ``(header, claims)``, or ProofError."""
    parts = proof.split(".")
    if len(parts) != 3:
        raise ProofError("not a compact JWS")
    try:
        header = json.loads(b64d(parts[0]))
        claims = json.loads(b64d(parts[1]))
    except ValueError as exc:
        raise ProofError("undecodable") from exc
    if header.get("typ") != "dpop+jwt":
        raise ProofError(f"typ {header.get('typ')!r}")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or {"d", "p", "q", "dp", "dq", "qi"} & set(jwk):
        raise ProofError("no public jwk (or a private one)")
    verify_signature(header.get("alg", ""), jwk, f"{parts[0]}.{parts[1]}".encode(),
                     b64d(parts[2]))
    if claims.get("htm") != method:
        raise ProofError(f"htm {claims.get('htm')!r}, request {method}")
    if claims.get("htu") != url.split("?")[0].split("#")[0]:
        raise ProofError(f"htu {claims.get('htu')!r}, request {url}")
    if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > 60:
        raise ProofError("iat")
    jti = claims.get("jti")
    if not isinstance(jti, str) or len(jti) < 16:
        raise ProofError("jti")
    if seen_jtis is not None:
        if jti in seen_jtis:
            raise ProofError("jti replayed")
        seen_jtis.add(jti)
    if access_token is not None:
        want = b64e(hashlib.sha256(access_token.encode("ascii")).digest())
        if claims.get("ath") != want:
            raise ProofError("ath")
    elif "ath" in claims:
        raise ProofError("ath without a token")
    if nonce is not None and claims.get("nonce") != nonce:
        raise ProofError("use_dpop_nonce")
    return header, claims


@attrs.define
class TokenRequest:
    """One token request: its form, its proof's claims and key thumbprint (if any)."""

    form: dict[str, str]
    proof_claims: dict[str, Any] | None
    jkt: str | None
    status: int
    error: str | None = None


class ExtAuthServer:
    """The authorization server (see the module docstring)."""

    def __init__(self, *, dpop_algs: list[str] | None = None, require_nonce: bool = False,
                 bind: bool = True, token_lifetime: int = 3600,
                 grant_types: list[str] | None = None) -> None:
        self.base = ""
        #: Advertised ``dpop_signing_alg_values_supported`` (None: not advertised).
        self.dpop_algs = dpop_algs
        self.require_nonce = require_nonce
        #: Issue DPoP-bound tokens when a proof comes (False: Bearer whatever comes).
        self.bind = bind
        self.token_lifetime = token_lifetime
        self.grant_types = grant_types or ["authorization_code", "refresh_token", JWT_BEARER]
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.workload_key = ec.generate_private_key(ec.SECP256R1())
        self.nonce = "as-nonce-" + secrets.token_hex(4)
        self.seen: list[Seen] = []
        self.token_requests: list[TokenRequest] = []
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.jtis: set[str] = set()

    def requests(self, path: str) -> list[Seen]:
        """The requests seen on ``path``."""
        return [s for s in self.seen if s.path == path]

    def workload_jwt(self, *, audience: str | None = None, lifetime: int = 300,
                     sub: str = "system:serviceaccount:ci:runner") -> str:
        """A JWT as a workload's platform would issue it (signed by the workload key)."""
        now = int(time.time())
        claims = {"iss": "https://platform.example", "sub": sub,
                  "aud": audience or self.base, "iat": now, "exp": now + lifetime,
                  "jti": secrets.token_hex(8)}
        return jwt.encode(claims, self.workload_key, algorithm="ES256")

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 document."""
        b = self.base
        doc: dict[str, Any] = {
            "issuer": b, "authorization_endpoint": f"{b}/authorize",
            "token_endpoint": f"{b}/token", "registration_endpoint": f"{b}/register",
            "response_types_supported": ["code"], "grant_types_supported": self.grant_types,
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
        if self.dpop_algs is not None:
            doc["dpop_signing_alg_values_supported"] = self.dpop_algs
        return doc

    def _mint(self, *, sub: str, scope: str, resource: str, jkt: str | None) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.base, "sub": sub, "aud": resource, "scope": scope,
                                  "iat": now, "exp": now + self.token_lifetime,
                                  "jti": secrets.token_hex(8)}
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        return jwt.encode(claims, self.key, algorithm="ES256")

    def verify_access_token(self, token: str) -> dict[str, Any]:
        """The claims of a token this server issued; jwt.PyJWTError otherwise."""
        claims: dict[str, Any] = jwt.decode(token, self.key.public_key(), algorithms=["ES256"],
                                            options={"verify_aud": False})
        return claims

    def _tokens(self, *, sub: str, scope: str, resource: str, jkt: str | None,
                refresh: bool) -> dict[str, Any]:
        bound = jkt if self.bind else None
        out: dict[str, Any] = {
            "access_token": self._mint(sub=sub, scope=scope, resource=resource, jkt=bound),
            "token_type": "DPoP" if bound else "Bearer", "expires_in": self.token_lifetime}
        if refresh:
            token = secrets.token_urlsafe(16)
            self.refresh[token] = {"sub": sub, "scope": scope, "resource": resource, "jkt": bound}
            out["refresh_token"] = token
        if scope:
            out["scope"] = scope
        return out

    def _token(self, seen: Seen) -> tuple[int, Any, dict[str, str]]:
        form = seen.form
        proof = seen.headers.get("dpop")
        claims: dict[str, Any] | None = None
        jkt: str | None = None
        record = TokenRequest(form=form, proof_claims=None, jkt=None, status=200)
        self.token_requests.append(record)

        def refuse(status: int, error: str, headers: dict[str, str] | None = None,
                   ) -> tuple[int, Any, dict[str, str]]:
            record.status, record.error = status, error
            return status, {"error": error}, headers or {}

        if proof is not None:
            try:
                header, claims = verify_proof(proof, "POST", f"{self.base}/token",
                                              seen_jtis=self.jtis)
            except ProofError:
                return refuse(400, "invalid_dpop_proof")
            jkt = thumbprint(header["jwk"])
            record.proof_claims, record.jkt = claims, jkt
            if self.require_nonce and claims.get("nonce") != self.nonce:
                return refuse(400, "use_dpop_nonce", {"dpop-nonce": self.nonce})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = self.codes.pop(form.get("code", ""), None)
            if entry is None or pkce_s256(form.get("code_verifier", "")) != entry["challenge"]:
                return refuse(400, "invalid_grant")
            if entry["dpop_jkt"] is not None and entry["dpop_jkt"] != jkt:
                return refuse(400, "invalid_grant")  # RFC 9449 §10: the code is bound
            return 200, self._tokens(sub="alice", scope=entry["scope"],
                                     resource=entry["resource"], jkt=jkt, refresh=True), {}
        if grant == "refresh_token":
            entry = self.refresh.pop(form.get("refresh_token", ""), None)
            if entry is None or (entry["jkt"] is not None and entry["jkt"] != jkt):
                return refuse(400, "invalid_grant")  # a bound refresh token needs its key
            return 200, self._tokens(sub=entry["sub"], scope=entry["scope"],
                                     resource=entry["resource"], jkt=jkt, refresh=True), {}
        if grant == JWT_BEARER:
            try:
                workload = jwt.decode(form.get("assertion", ""), self.workload_key.public_key(),
                                      algorithms=["ES256"], audience=[self.base, self.base + "/"])
            except jwt.PyJWTError:
                return refuse(400, "invalid_grant")
            scope = form.get("scope", "")
            if "forbidden" in scope.split():
                return refuse(400, "invalid_scope")
            return 200, self._tokens(sub=workload["sub"], scope=scope,
                                     resource=form.get("resource", ""), jkt=jkt,
                                     refresh=False), {}
        return refuse(400, "unsupported_grant_type")

    def handle(self, seen: Seen) -> tuple[int, Any, dict[str, str]]:
        """``(status, JSON body, extra headers)`` for one request."""
        q = seen.query
        if seen.path == "/.well-known/oauth-authorization-server":
            return 200, self.metadata(), {}
        if seen.path == "/register":
            body = orjson.loads(seen.form.get("_json", "{}"))
            return 201, {"client_id": f"client-{secrets.token_hex(3)}",
                         "redirect_uris": body.get("redirect_uris", []),
                         "token_endpoint_auth_method": "none"}, {}
        if seen.path == "/authorize":
            code = secrets.token_urlsafe(12)
            self.codes[code] = {"challenge": q.get("code_challenge"), "scope": q.get("scope", ""),
                                "resource": q.get("resource", ""), "dpop_jkt": q.get("dpop_jkt")}
            loc = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
            return 302, None, {"location": loc}
        if seen.path == "/token":
            return self._token(seen)
        return 404, {"error": "not_found"}, {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        body = await _body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if headers.get("content-type", "").startswith("application/json"):
            form = {"_json": body.decode()}
        else:
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        seen = Seen(scope["method"], scope["path"], query, form, headers)
        self.seen.append(seen)
        status, data, extra = self.handle(seen)
        await _respond(send, status, data, extra)


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            return body


async def _respond(send: Any, status: int, data: Any, extra: dict[str, str]) -> None:
    out = b"" if data is None else orjson.dumps(data)
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
    hdrs += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": out})


@attrs.define
class GateRequest:
    """One request the gate judged."""

    method: str
    scheme: str | None
    claims: dict[str, Any] | None
    verdict: str  # "ok", "no token", "use_dpop_nonce", or why it was refused


class DPoPGate:
    """The resource server's gate (see the module docstring) in front of ``app``.

    ``schemes``: the challenge's schemes (``("DPoP",)`` says only DPoP is taken).
    ``require_nonce``: every proof must carry the gate's current nonce.
    ``rotate_after``: hand out a new nonce (``DPoP-Nonce`` on a successful answer)
    after that many requests let through.
    """

    def __init__(self, app: Any, mcp_url: str, auth: ExtAuthServer, *,
                 schemes: tuple[str, ...] = ("DPoP",), require_nonce: bool = False,
                 rotate_after: int | None = None, prm_extra: dict[str, Any] | None = None,
                 algs: str = "ES256 EdDSA PS256") -> None:
        self.app = app
        self.mcp_url = mcp_url
        self.auth = auth
        self.schemes = schemes
        self.require_nonce = require_nonce
        self.rotate_after = rotate_after
        self.prm_extra = prm_extra or {}
        self.algs = algs
        self.nonce = "rs-nonce-" + secrets.token_hex(4)
        self.nonces_issued = [self.nonce]
        self.jtis: set[str] = set()
        self.judged: list[GateRequest] = []
        self._passed = 0

    def _challenge(self, error: str | None = None) -> str:
        prm = self.mcp_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        out = []
        for scheme in self.schemes:
            params = [f'resource_metadata="{prm}"']
            if scheme == "DPoP":
                params.insert(0, f'algs="{self.algs}"')
            if error is not None:
                params.insert(0, f'error="{error}"')
            out.append(f"{scheme} {', '.join(params)}")
        return ", ".join(out)

    def _judge(self, method: str, headers: dict[str, str]) -> tuple[str, str | None,
                                                                    dict[str, Any] | None]:
        authz = headers.get("authorization")
        if not authz:
            return "no token", None, None
        scheme, _, token = authz.partition(" ")
        try:
            claims = self.auth.verify_access_token(token)
        except jwt.PyJWTError:
            return "invalid_token", scheme, None
        if scheme.lower() == "bearer":
            if "Bearer" not in self.schemes or "cnf" in claims:
                return "invalid_token", scheme, claims  # RFC 9449 §7.2: no downgrade
            return "ok", scheme, claims
        if scheme.lower() != "dpop" or "DPoP" not in self.schemes:
            return "invalid_token", scheme, claims
        proof = headers.get("dpop")
        if proof is None or "," in proof:
            return "invalid_dpop_proof", scheme, claims
        try:
            header, proof_claims = verify_proof(
                proof, method, self.mcp_url, access_token=token, seen_jtis=self.jtis)
        except ProofError as exc:
            return f"invalid_dpop_proof: {exc}", scheme, claims
        if claims.get("cnf", {}).get("jkt") != thumbprint(header["jwk"]):
            return "invalid_dpop_proof: another key", scheme, claims
        if self.require_nonce and proof_claims.get("nonce") != self.nonce:
            return "use_dpop_nonce", scheme, proof_claims
        return "ok", scheme, proof_claims

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["path"].startswith("/.well-known/oauth-protected-resource"):
            await _body(receive)
            doc = {"resource": self.mcp_url, "authorization_servers": [self.auth.base],
                   **self.prm_extra}
            await _respond(send, 200, doc, {})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        verdict, scheme, claims = self._judge(scope["method"], headers)
        self.judged.append(GateRequest(scope["method"], scheme, claims, verdict))
        if verdict != "ok":
            await _body(receive)
            error = None if verdict == "no token" else verdict.split(":")[0]
            extra = {"www-authenticate": self._challenge(error)}
            if verdict == "use_dpop_nonce":
                extra["dpop-nonce"] = self.nonce
            await _respond(send, 401, {"error": error or "unauthorized"}, extra)
            return
        self._passed += 1
        new_nonce = None
        if self.rotate_after and self._passed % self.rotate_after == 0:
            new_nonce = self.nonce = "rs-nonce-" + secrets.token_hex(4)
            self.nonces_issued.append(new_nonce)

        async def send_with_nonce(msg: dict[str, Any]) -> None:
            if new_nonce is not None and msg["type"] == "http.response.start":
                msg = {**msg, "headers": [*msg.get("headers", []),
                                          (b"dpop-nonce", new_nonce.encode())]}
            await send(msg)

        await self.app(scope, receive, send_with_nonce)


def tiny_server() -> Server:
    """The MCP server behind the gate."""
    server = Server("ext-protected", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> str:
        """a + b."""
        return str(a + b)

    return server


@attrs.define
class ExtStack:
    """The running pair."""

    auth: ExtAuthServer
    gate: DPoPGate
    mcp_url: str


async def _serve(nursery: trio.Nursery, app: Any, port: int = 0) -> str:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.graceful_timeout = 0.5
    binds = await nursery.start(serve, app, config)  # type: ignore[arg-type]
    return str(binds[0])


@asynccontextmanager
async def ext_stack(*, auth: ExtAuthServer | None = None, server: Server | None = None,
                    **gate_options: Any) -> AsyncIterator[ExtStack]:
    """Start the authorization server and a gated mcpactor server (``server``, else
    :func:`tiny_server`) on 127.0.0.1."""
    async with trio.open_nursery() as nursery:
        stub = auth or ExtAuthServer(dpop_algs=["ES256", "EdDSA", "PS256"])
        stub.base = await _serve(nursery, stub)
        port = free_port()
        mcp_url = f"http://127.0.0.1:{port}/mcp"
        app = McpHttpApp(server or tiny_server(), HttpOptions())
        await nursery.start(app.run)
        gate = DPoPGate(app, mcp_url, stub, **gate_options)
        base = await _serve(nursery, gate, port)
        assert f"{base}/mcp" == mcp_url
        try:
            yield ExtStack(stub, gate, mcp_url)
        finally:
            nursery.cancel_scope.cancel()
