"""A real (small) OAuth 2.1 authorization server for the auth tests, plus a protected
mcpactor server, both on 127.0.0.1 with random ports.

The stub is an ASGI app served by hypercorn: RFC 8414 metadata, JWKS, Dynamic Client
Registration, an authorization endpoint that approves at once (redirecting with a code),
a token endpoint (authorization_code with PKCE S256 checked, refresh_token with
rotation, client_credentials) issuing ES256 JWT access tokens bound to the requested
resource, and token introspection (RFC 7662). It records every request so tests can
check what the client sent.
"""

from __future__ import annotations

import base64
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode

import attrs
import jwt
import orjson
import trio
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from mcpactor import Context, Server
from mcpactor.auth.resource_server import ResourceServer
from mcpactor.auth.verifier import AccessToken, InvalidToken, JwtVerifier, TokenVerifier
from mcpactor.transports.http_server import HttpOptions, McpHttpApp, serve_app


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pkce_s256(verifier: str) -> str:
    """S256 computed with `cryptography` (independently of mcpactor.auth.pkce)."""
    digest = hashes.Hash(hashes.SHA256())
    digest.update(verifier.encode())
    return _b64url(digest.finalize())


@attrs.define
class Seen:
    """One request the stub received."""

    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    headers: dict[str, str]


class StubAuthServer:
    """The authorization server (see the module docstring)."""

    def __init__(self, *, grantable: set[str] | None = None, token_lifetime: int = 3600,
                 iss_supported: bool = False, iss: str = "correct") -> None:
        self.base = ""  # set once the port is known
        #: RFC 9207: advertise ``authorization_response_iss_parameter_supported``, and
        #: what ``iss`` the redirect carries: ``correct``, ``omit``, ``wrong`` (another
        #: server's) or ``slash`` (the issuer with a trailing slash).
        self.iss_supported = iss_supported
        self.iss = iss
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.kid = "stub-key-1"
        #: Client ids differ between stubs (a client must not carry one to another).
        self.kid_prefix = secrets.token_hex(3) + "-"
        #: Scopes the server ever grants (None: whatever is asked).
        self.grantable = grantable
        self.token_lifetime = token_lifetime
        self.seen: list[Seen] = []
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.revoked_refresh: set[str] = set()
        self.issued: list[str] = []

    # -- helpers ---------------------------------------------------------------------

    def requests(self, path: str) -> list[Seen]:
        """The requests seen on ``path``."""
        return [s for s in self.seen if s.path == path]

    def jwks(self) -> dict[str, Any]:
        """The public key set."""
        jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        jwk.update(kid=self.kid, alg="ES256", use="sig")
        return {"keys": [jwk]}

    def mint(self, *, sub: str, client_id: str, scope: str, resource: str,
             lifetime: int | None = None, **extra: Any) -> str:
        """An access token as this server issues them."""
        now = int(time.time())
        claims = {"iss": self.base, "sub": sub, "aud": resource, "client_id": client_id,
                  "scope": scope, "iat": now, "exp": now + (lifetime or self.token_lifetime),
                  "jti": secrets.token_hex(8), **extra}
        token = jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.kid})
        self.issued.append(token)
        return token

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 document."""
        b = self.base
        return {
            "issuer": b, "authorization_endpoint": f"{b}/authorize", "token_endpoint": f"{b}/token",
            "registration_endpoint": f"{b}/register", "jwks_uri": f"{b}/jwks",
            "introspection_endpoint": f"{b}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "scopes_supported": ["mcp:read", "mcp:admin", "offline_access"],
            **({"authorization_response_iss_parameter_supported": True}
               if self.iss_supported else {}),
        }

    def _iss(self) -> dict[str, str]:
        return {"correct": {"iss": self.base}, "omit": {}, "slash": {"iss": self.base + "/"},
                "wrong": {"iss": "https://evil.example.com"}}[self.iss]

    def _grant(self, scope: str | None) -> str:
        asked = (scope or "").split()
        if self.grantable is not None:
            asked = [s for s in asked if s in self.grantable]
        return " ".join(asked)

    def _client(self, form: dict[str, str], headers: dict[str, str]) -> str | None:
        """The authenticated client id (basic, post, or none for public clients)."""
        auth = headers.get("authorization", "")
        if auth.startswith("Basic "):
            cid, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        else:
            cid, secret = form.get("client_id", ""), form.get("client_secret", "")
        client = self.clients.get(cid)
        if client is None:
            return None
        if client.get("client_secret") and client["client_secret"] != secret:
            return None
        return cid

    def _tokens(self, *, sub: str, client_id: str, scope: str, resource: str) -> dict[str, Any]:
        refresh = secrets.token_urlsafe(16)
        self.refresh[refresh] = {"sub": sub, "client_id": client_id, "scope": scope, "resource": resource}
        return {"access_token": self.mint(sub=sub, client_id=client_id, scope=scope, resource=resource),
                "token_type": "Bearer", "expires_in": self.token_lifetime,
                "refresh_token": refresh, "scope": scope}

    # -- endpoints ---------------------------------------------------------------------

    def handle(self, seen: Seen) -> tuple[int, Any, dict[str, str]]:
        """``(status, JSON body, extra headers)`` for one request."""
        path, q, form = seen.path, seen.query, seen.form
        if path == "/.well-known/oauth-authorization-server":
            return 200, self.metadata(), {}
        if path == "/jwks":
            return 200, self.jwks(), {}
        if path == "/register":
            cid = f"client-{self.kid_prefix}{len(self.clients) + 1}"
            body = orjson.loads(seen.form.get("_json", "{}"))
            method = body.get("token_endpoint_auth_method", "client_secret_basic")
            info = {"client_id": cid, **({"client_secret": secrets.token_urlsafe(12)} if method != "none" else {}),
                    "redirect_uris": body.get("redirect_uris", []), "token_endpoint_auth_method": method}
            self.clients[cid] = info
            return 201, info, {}
        if path == "/authorize":
            if q.get("client_id") not in self.clients or q.get("code_challenge_method") != "S256":
                return 400, {"error": "invalid_request"}, {}
            code = secrets.token_urlsafe(12)
            self.codes[code] = {"challenge": q["code_challenge"], "client_id": q["client_id"],
                                "scope": self._grant(q.get("scope")), "resource": q.get("resource"),
                                "redirect_uri": q.get("redirect_uri")}
            loc = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", ""),
                                                        **self._iss()})
            return 302, None, {"location": loc}
        if path == "/token":
            return self._token(seen)
        if path == "/introspect":
            tok = form.get("token", "")
            try:
                claims = jwt.decode(tok, self.key.public_key(), algorithms=["ES256"],
                                    options={"verify_aud": False})
            except jwt.PyJWTError:
                return 200, {"active": False}, {}
            return 200, {"active": True, **claims}, {}
        return 404, {"error": "not_found"}, {}

    def _token(self, seen: Seen) -> tuple[int, Any, dict[str, str]]:
        form = seen.form
        grant = form.get("grant_type")
        cid = self._client(form, seen.headers)
        if cid is None:
            return 401, {"error": "invalid_client"}, {}
        if grant == "authorization_code":
            entry = self.codes.pop(form.get("code", ""), None)
            if (entry is None or entry["client_id"] != cid
                    or pkce_s256(form.get("code_verifier", "")) != entry["challenge"]
                    or form.get("resource") != entry["resource"]
                    or form.get("redirect_uri") != entry["redirect_uri"]):
                return 400, {"error": "invalid_grant"}, {}
            return 200, self._tokens(sub="alice", client_id=cid, scope=entry["scope"],
                                     resource=entry["resource"]), {}
        if grant == "refresh_token":
            old = form.get("refresh_token", "")
            entry = self.refresh.pop(old, None)
            if entry is None or entry["client_id"] != cid:
                return 400, {"error": "invalid_grant"}, {}
            self.revoked_refresh.add(old)  # rotation: each refresh token works once
            return 200, self._tokens(sub=entry["sub"], client_id=cid, scope=entry["scope"],
                                     resource=form.get("resource") or entry["resource"]), {}
        if grant == "client_credentials":
            token = self.mint(sub=cid, client_id=cid, scope=self._grant(form.get("scope")),
                              resource=form.get("resource", ""))
            return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}, {}
        return 400, {"error": "unsupported_grant_type"}, {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        ctype = headers.get("content-type", "")
        if ctype.startswith("application/json"):
            form = {"_json": body.decode()}
        else:
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        seen = Seen(scope["method"], scope["path"], query, form, headers)
        self.seen.append(seen)
        status, data, extra = self.handle(seen)
        out = b"" if data is None else orjson.dumps(data)
        hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
        hdrs += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": out})


def free_port() -> int:
    """A port free right now on 127.0.0.1 (the protected server must know its URL,
    which is its token audience, before it starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def protected_server() -> Server:
    """An MCP server whose tools show what ``ctx.auth`` holds."""
    server = Server("protected-server", version="1.0.0")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Who the token speaks for, and its scopes."""
        auth = ctx.auth
        assert auth is not None
        return f"{auth.subject} {' '.join(sorted(auth.scopes))}"

    @server.tool()
    async def slow_whoami(ctx: Context) -> str:
        """Like whoami, read after other requests had time to arrive."""
        await trio.sleep(0.3)
        auth = ctx.auth
        assert auth is not None
        return f"{auth.subject} {' '.join(sorted(auth.scopes))}"

    @server.tool(scopes=["mcp:admin"])
    async def admin_op() -> str:
        """Needs mcp:admin."""
        return "admin done"

    return server


@attrs.define
class Stack:
    """The running pair."""

    auth: StubAuthServer
    as_url: str
    mcp_url: str
    resource_server: ResourceServer


async def start_stub(nursery: trio.Nursery, **options: Any) -> StubAuthServer:
    """The authorization server stub, served by hypercorn on 127.0.0.1 in ``nursery``."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    stub = StubAuthServer(**options)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 0.5
    binds = await nursery.start(serve, stub, config)  # type: ignore[arg-type]
    stub.base = binds[0]
    return stub


@asynccontextmanager
async def oauth_stack(*, verifier: TokenVerifier | None = None, grantable: set[str] | None = None,
                      token_lifetime: int = 3600, required_scopes: tuple[str, ...] = ("mcp:read",),
                      **options: Any) -> AsyncIterator[Stack]:
    """Start the authorization server stub and a protected mcpactor server."""
    async with trio.open_nursery() as nursery:
        stub = await start_stub(nursery, grantable=grantable, token_lifetime=token_lifetime)
        port = free_port()
        mcp_url = f"http://127.0.0.1:{port}/mcp"
        rs = ResourceServer(
            resource=mcp_url, authorization_servers=[stub.base],
            verifier=verifier or JwtVerifier(issuer=stub.base, audience=mcp_url, jwks_url=f"{stub.base}/jwks"),
            required_scopes=required_scopes, scopes_supported=["mcp:read", "mcp:admin"],
        )
        app = McpHttpApp(protected_server(), HttpOptions(auth=rs, **options))
        url = await nursery.start(lambda task_status: serve_app(
            app, host="127.0.0.1", port=port, quiet=True, task_status=task_status))
        assert url == mcp_url
        try:
            yield Stack(stub, stub.base, mcp_url, rs)
        finally:
            nursery.cancel_scope.cancel()


class LateVerifier:
    """A verifier whose real one is made once the stack's URLs are known (``.inner``);
    tokens in ``revoked`` are refused first."""

    def __init__(self) -> None:
        self.inner: TokenVerifier | None = None
        self.revoked: set[str] = set()

    async def verify(self, token: str) -> AccessToken:
        """See TokenVerifier."""
        if token in self.revoked:
            raise InvalidToken("revoked")
        assert self.inner is not None
        return await self.inner.verify(token)
