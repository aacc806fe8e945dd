"""Access token validation for the resource server (OAuth 2.1 §5.2).

:class:`TokenVerifier` is the interface. :class:`JwtVerifier` checks a JWT access token
(RFC 9068) against the authorization server's JWKS (signature, ``exp``/``nbf``,
issuer, and audience bound to this server's canonical URI per RFC 8707), with PyJWT.
:class:`IntrospectionVerifier` asks the authorization server (RFC 7662).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import attrs
import trio

from mcpactor.auth.httpio import OAuthHttp
from mcpactor.extras import require

if TYPE_CHECKING:
    import jwt

__all__ = [
    "AccessToken",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwtVerifier",
    "StaticTokenVerifier",
    "TokenVerifier",
]


class InvalidToken(Exception):
    """The token is missing its mark: expired, forged, for another audience, revoked."""


@attrs.frozen(kw_only=True)
class AccessToken:
    """A validated token: who it speaks for and what it allows (``ctx.auth``)."""

    token: str = attrs.field(repr=False)
    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    issuer: str | None = None
    audience: tuple[str, ...] = ()
    claims: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def principal(self) -> str | None:
        """The subject, else the client (for client-credentials tokens)."""
        return self.subject or self.client_id

    def has_scopes(self, required: Iterable[str]) -> bool:
        """Whether every scope in ``required`` was granted."""
        return set(required) <= self.scopes


class TokenVerifier(Protocol):
    """Turns a bearer token into an :class:`AccessToken` or raises :class:`InvalidToken`."""

    async def verify(self, token: str) -> AccessToken:
        """Validate ``token``."""
        ...


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")  # some servers send a list under this name
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


def _audiences(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _accepted(audience: str) -> list[str]:
    # RFC 3986 treats the two forms as one; authorization servers differ in which they put.
    bare = audience.rstrip("/")
    return [bare, bare + "/"]


class JwtVerifier:
    """JWT access tokens signed with a key from the issuer's JWKS."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_url: str | None = None,
        jwks: dict[str, Any] | None = None,
        algorithms: Iterable[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        leeway: float = 30.0,
        http: OAuthHttp | None = None,
        refetch_interval: float = 60.0,
    ) -> None:
        if jwks_url is None and jwks is None:
            raise ValueError("JwtVerifier needs jwks_url or jwks")
        # PyJWT (mcpactor[auth]) is needed from here on: found missing now, not at the
        # first token.
        self._jwt = require("jwt", "JwtVerifier (JWT access tokens)")
        self.issuer = issuer
        self.audience = audience
        self.jwks_url = jwks_url
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.http = http or OAuthHttp()
        self.refetch_interval = refetch_interval
        self._keys: jwt.PyJWKSet | None = None
        if jwks is not None:
            try:
                self._keys = self._jwt.PyJWKSet.from_dict(jwks)
            except self._jwt.PyJWTError as exc:
                raise ValueError(f"unusable jwks: {exc}") from exc
        self._fetched_at = -float("inf")
        self._lock = trio.Lock()

    async def _fetch(self) -> None:
        assert self.jwks_url is not None
        answer = await self.http.get_json(self.jwks_url)
        self._fetched_at = time.monotonic()
        if not answer.ok or not isinstance(answer.data, dict):
            raise InvalidToken("cannot fetch the issuer's keys")
        try:
            self._keys = self._jwt.PyJWKSet.from_dict(answer.data)
        except self._jwt.PyJWTError as exc:
            raise InvalidToken(f"unusable JWKS: {exc}") from exc

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if self._keys is None:
            return None
        keys = self._keys.keys
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((k for k in keys if k.key_id == kid), None)

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        key = self._find(kid)
        if key is None and self.jwks_url is not None:
            async with self._lock:
                # An unknown kid may mean the issuer rotated keys: fetch again, but not
                # more often than refetch_interval (forged kids must not cost a fetch each).
                key = self._find(kid)
                if key is None and time.monotonic() - self._fetched_at >= self.refetch_interval:
                    await self._fetch()
                    key = self._find(kid)
        if key is None:
            raise InvalidToken("no key for this token")
        return key

    async def verify(self, token: str) -> AccessToken:
        """See :class:`TokenVerifier`."""
        try:
            header = self._jwt.get_unverified_header(token)
        except self._jwt.PyJWTError as exc:
            raise InvalidToken("not a JWT") from exc
        key = await self._key(header.get("kid"))
        try:
            claims = self._jwt.decode(
                token, key, algorithms=self.algorithms, audience=_accepted(self.audience),
                issuer=self.issuer, leeway=self.leeway, options={"require": ["exp", "iss", "aud"]},
            )
        except self._jwt.PyJWTError as exc:
            raise InvalidToken(str(exc)) from exc
        return AccessToken(
            token=token, subject=claims.get("sub"), client_id=claims.get("client_id") or claims.get("azp"),
            scopes=_scopes(claims), expires_at=claims.get("exp"), issuer=claims.get("iss"),
            audience=_audiences(claims.get("aud")), claims=claims,
        )


class IntrospectionVerifier:
    """Asks the authorization server about each token (RFC 7662), authenticating with
    ``client_secret_basic``. Results are not cached: revocation takes effect at once."""

    def __init__(
        self,
        *,
        introspection_endpoint: str,
        audience: str,
        client_id: str | None = None,
        client_secret: str | None = None,
        require_audience: bool = True,
        http: OAuthHttp | None = None,
    ) -> None:
        self.endpoint = introspection_endpoint
        self.audience = audience
        self.client_id = client_id
        self.client_secret = client_secret
        self.require_audience = require_audience
        self.http = http or OAuthHttp()

    async def verify(self, token: str) -> AccessToken:
        """See :class:`TokenVerifier`."""
        headers: list[tuple[str, str]] = []
        if self.client_id is not None and self.client_secret is not None:
            raw = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
            headers.append(("authorization", "Basic " + base64.b64encode(raw.encode()).decode()))
        answer = await self.http.post_form(
            self.endpoint, {"token": token, "token_type_hint": "access_token"}, headers)
        data = answer.data
        if not answer.ok or not isinstance(data, dict):
            raise InvalidToken(f"introspection failed: HTTP {answer.status}")
        if data.get("active") is not True:
            raise InvalidToken("token is not active")
        now = time.time()
        exp = data.get("exp")
        if isinstance(exp, (int, float)) and exp < now:
            raise InvalidToken("token expired")
        nbf = data.get("nbf")
        if isinstance(nbf, (int, float)) and nbf > now + 30:
            raise InvalidToken("token not yet valid")
        aud = _audiences(data.get("aud"))
        if (aud or self.require_audience) and not set(aud) & set(_accepted(self.audience)):
            raise InvalidToken("token is for another audience")
        return AccessToken(
            token=token, subject=data.get("sub"), client_id=data.get("client_id"),
            scopes=_scopes(data), expires_at=float(exp) if isinstance(exp, (int, float)) else None,
            issuer=data.get("iss"), audience=aud, claims=data,
        )


class StaticTokenVerifier:
    """A fixed table of tokens (tests, development). Never for production."""

    def __init__(self, tokens: dict[str, AccessToken]) -> None:
        self.tokens = tokens

    async def verify(self, token: str) -> AccessToken:
        """See :class:`TokenVerifier`."""
        found = self.tokens.get(token)
        if found is None:
            raise InvalidToken("unknown token")
        if found.expires_at is not None and found.expires_at < time.time():
            raise InvalidToken("token expired")
        return found
