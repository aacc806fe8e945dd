"""Wiring OAuth into the HTTP client: :class:`AuthorizedPool`.

An :class:`HttpPool` that puts the access token on every request to the MCP server's
origin (never elsewhere: tokens are bound to their resource): ``Authorization: Bearer``,
or ``Authorization: DPoP`` with a fresh proof of the request for a DPoP-bound token.
When the answer is a 401 or a 403 ``insufficient_scope``, it lets the
:class:`OAuthClient` get a (better) token and sends the request again, at most
``max_authorizations`` times; a 401 ``use_dpop_nonce`` is answered with a new proof
carrying the server's nonce (twice at most), which costs no authorization. The
Streamable HTTP transport uses it as it is, so every POST, GET and DELETE is covered.
"""

from __future__ import annotations

from mcpactor.auth.challenge import find_challenge
from mcpactor.auth.client_flow import OAuthClient
from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.metadata import origin_of
from mcpactor.transports.http_client import HttpPool, HttpResponse, PendingResponse

__all__ = ["AuthorizedPool", "with_bearer"]


def with_bearer(headers: list[tuple[str, str]] | None, token: str | None) -> list[tuple[str, str]]:
    """``headers`` with any Authorization replaced by our bearer token."""
    out = [(k, v) for k, v in (headers or []) if k.lower() != "authorization"]
    if token is not None:
        out.append(("authorization", f"Bearer {token}"))
    return out


def _has_proof(headers: list[tuple[str, str]]) -> bool:
    return any(k == "dpop" for k, _ in headers)


async def _drain(resp: HttpResponse) -> None:
    try:
        await resp.read(1024 * 1024)
    finally:
        await resp.aclose()


class _AuthPending(PendingResponse):
    """A sent request whose answer may send the client through authorization first."""

    def __init__(self, pool: AuthorizedPool, inner: PendingResponse, method: str, url: str,
                 headers: list[tuple[str, str]] | None, body: bytes | None,
                 token: str | None, proved: bool) -> None:
        # Not calling super().__init__: this wraps a PendingResponse, it owns no connection.
        self._auth_pool = pool
        self._inner = inner
        self._request = (method, url, headers, body)
        self._token = token
        #: The request carried a DPoP proof (only then can a nonce make a difference).
        self._proved = proved

    async def _again(self) -> HttpResponse:
        """The request sent once more, with the credentials (and a proof) of now."""
        pool = self._auth_pool
        method, url, headers, body = self._request
        sent, self._token = await pool.auth.authorization_headers(method, url, headers)
        self._proved = _has_proof(sent)
        pending = await HttpPool.send(pool, method, url, sent, body)
        resp = await pending.response()
        pool.auth.dpop.note_nonce(url, resp.headers)
        return resp

    async def response(self) -> HttpResponse:
        """The answer, after as many authorizations as it takes (and is allowed)."""
        pool = self._auth_pool
        auth = pool.auth
        resp = await self._inner.response()
        auth.dpop.note_nonce(self._request[1], resp.headers)
        authorizations = nonce_retries = 0
        while resp.status in (401, 403):
            header = resp.headers.get("www-authenticate")
            if (self._proved and nonce_retries < 2
                    and auth.dpop.is_nonce_challenge(resp.status, resp.headers)):
                # RFC 9449 §9: the resource server wants a proof with its nonce (now
                # kept); the token is fine, so this is no new authorization.
                await _drain(resp)
                nonce_retries += 1
                resp = await self._again()
                continue
            if self._request[0] == "DELETE":
                return resp  # ending a session is not worth sending a user through a login
            if resp.status == 403:
                ch = find_challenge(header)
                if ch is None or ch.error != "insufficient_scope":
                    return resp
            await _drain(resp)
            if authorizations >= auth.max_authorizations:
                raise AuthorizationError(
                    f"HTTP {resp.status} again after {authorizations} authorizations: giving up")
            await auth.handle_challenge(resp.status, header, self._token)
            authorizations += 1
            resp = await self._again()
        return resp


class AuthorizedPool(HttpPool):
    """:class:`HttpPool` + OAuth for one MCP server (see the module docstring)."""

    def __init__(self, auth: OAuthClient, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.auth = auth
        self._origin = origin_of(auth.server_url)

    async def send(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]] | None = None,
        body: bytes | None = None,
    ) -> PendingResponse:
        """Send with the current token; the answer handles challenges (see above)."""
        if origin_of(url) != self._origin:
            return await super().send(method, url, headers, body)
        sent, token = await self.auth.authorization_headers(method, url, headers)
        inner = await super().send(method, url, sent, body)
        return _AuthPending(self, inner, method, url, headers, body, token, _has_proof(sent))

    async def aclose(self) -> None:
        """Close the MCP connections and the OAuth flow's."""
        await super().aclose()
        await self.auth.aclose()
