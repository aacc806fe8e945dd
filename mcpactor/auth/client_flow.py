"""The client side of MCP authorization: :class:`OAuthClient`.

It reacts to a resource server's challenge (401, or 403 ``insufficient_scope``):
discovers the protected-resource metadata (RFC 9728; the ``resource_metadata`` of the
challenge, then the well-known URLs) and the authorization server's metadata (RFC 8414,
OpenID Connect Discovery; with the 2025-03-26 fallbacks when a server has no
protected-resource document), checks the document describes this server, chooses the
scope, gets a client id, runs the grant and keeps the tokens. Refreshes (with rotation)
when a token expires or is refused. Tokens are DPoP-bound (RFC 9449, the MCP DPoP
extension) when the resource server asks for it or the client is told to
(``dpop=``): :mod:`mcpactor.auth.dpop_signer` decides and signs.

HTTP-level wiring is in :mod:`mcpactor.auth.http_auth`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from mcpactor.auth.challenge import Challenge, find_challenge
from mcpactor.auth.dpop import DPoPKey
from mcpactor.auth.dpop_signer import DPoPMode, DPoPSigner
from mcpactor.auth.errors import AuthorizationError, TokenEndpointError
from mcpactor.auth.grants import AuthorizationCodeGrant, FlowState, Grant
from mcpactor.auth.httpio import OAuthHttp
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
from mcpactor.auth.redirect import LoopbackRedirectHandler
from mcpactor.auth.registration import ClientConfig, choose_auth_method, obtain_client
from mcpactor.auth.storage import ClientInfo, InMemoryTokenStorage, TokenSet, TokenStorage
from mcpactor.auth.token_endpoint import request_token

log = logging.getLogger("mcpactor.auth.client")

__all__ = ["OAuthClient", "merge_scopes"]


def merge_scopes(*scopes: str | None) -> str | None:
    """The union of space-separated scope strings, first-seen order kept."""
    out: list[str] = []
    for s in scopes:
        for item in (s or "").split():
            if item not in out:
                out.append(item)
    return " ".join(out) or None


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class OAuthClient:
    """OAuth 2.1 client for one MCP server (one resource).

    ``grant`` defaults to the authorization code flow through a loopback redirect
    listener; ``storage`` to memory. ``max_authorizations`` bounds how many times one
    request may send the client through authorization (step-up loops end there).

    ``dpop`` (RFC 9449 sender-constrained tokens): ``"auto"`` (the default) binds the
    tokens to a key when the resource server asks for DPoP (a ``DPoP`` challenge, or
    its metadata); ``"always"`` on every token request, refusing a Bearer token;
    ``"never"`` not at all. ``dpop_key``: the key (a :class:`DPoPKey`); by default one
    is generated in memory when first needed, so tokens kept in a file need a kept
    key (``DPoPKey.from_pem``) to outlive the process.
    """

    def __init__(
        self,
        server_url: str,
        *,
        config: ClientConfig | None = None,
        grant: Grant | None = None,
        storage: TokenStorage | None = None,
        http: OAuthHttp | None = None,
        max_authorizations: int = 3,
        clock: Callable[[], float] = time.time,
        allow_insecure_http: bool = False,
        dpop: DPoPMode = "auto",
        dpop_key: DPoPKey | None = None,
    ) -> None:
        self.server_url = server_url
        self.config = config or ClientConfig()
        self.grant: Grant = grant or AuthorizationCodeGrant(LoopbackRedirectHandler())
        self.storage: TokenStorage = storage or InMemoryTokenStorage()
        self.http = http or OAuthHttp()
        self.max_authorizations = max_authorizations
        self.clock = clock
        #: Talk to authorization servers over plain HTTP on non-loopback hosts (dev only).
        self.allow_insecure_http = allow_insecure_http
        #: DPoP: the mode, the key, the servers' nonces.
        self.dpop = DPoPSigner(dpop, dpop_key)
        self.key = canonical_resource(server_url)
        self.resource = self.key
        self.prm: ProtectedResourceMetadata | None = None
        self.asm: AuthorizationServerMetadata | None = None
        self._prm_url: str | None = None
        self._client: ClientInfo | None = None
        #: The issuer of the authorization server ``_client`` was registered with.
        self._client_issuer: str | None = None
        self._tokens: TokenSet | None = None
        self._loaded = False
        self._scope: str | None = None
        self._lock = trio.Lock()

    # -- what the HTTP layer calls -------------------------------------------------------

    async def access_token(self) -> str | None:
        """The token to send now (refreshed first when known to be expired), or None."""
        tokens = await self._current_tokens()
        return tokens.access_token if tokens is not None else None

    async def authorization_headers(
        self, method: str, url: str, headers: list[tuple[str, str]] | None = None,
    ) -> tuple[list[tuple[str, str]], str | None]:
        """``headers`` with this client's credentials for one request to the server,
        and the access token they carry: ``Authorization: Bearer``, or for a DPoP-bound
        token ``Authorization: DPoP`` and a fresh ``DPoP`` proof of this request."""
        out = [(k, v) for k, v in headers or [] if k.lower() not in ("authorization", "dpop")]
        tokens = await self._current_tokens()
        if tokens is None:
            return out, None
        token = tokens.access_token
        if tokens.token_type == "DPoP":
            out.append(("authorization", f"DPoP {token}"))
            out.append(("dpop", self.dpop.proof(method, url, access_token=token)))
        else:
            out.append(("authorization", f"Bearer {token}"))
        return out, token

    async def _current_tokens(self) -> TokenSet | None:
        if not self._loaded:
            stored = await self.storage.get_tokens(self.key)
            key = self.dpop.key
            if stored is not None and stored.token_type == "DPoP" and (
                    key is None or key.thumbprint != stored.dpop_jkt):
                # Bound to a key we do not hold (a generated one died with its process):
                # no request could use it, so authorize afresh.
                log.info("the stored token is bound to another DPoP key: not using it")
                stored = None
            self._tokens = stored
            self._loaded = True
        tokens = self._tokens
        if tokens is not None and tokens.expired(self.clock()):
            if tokens.refresh_token:
                async with self._lock:
                    if self._tokens is tokens:
                        await self._refresh()
            elif not self.grant.interactive and self.asm is not None:
                # A machine's grant (client credentials, workload identity...) comes
                # with no refresh token: run it again before the token lapses, rather
                # than send one known to be expired. Its failure is this request's.
                async with self._lock:
                    if self._tokens is tokens:
                        await self._authorize(self._scope)
        return self._tokens

    async def handle_challenge(self, status: int, www_authenticate: str | None,
                               used_token: str | None) -> None:
        """React to a 401/403 that came back for a request sent with ``used_token``.

        Returns when a new token is in place; raises :class:`AuthorizationError` when
        the client cannot (or must not) get one.
        """
        async with self._lock:
            current = self._tokens.access_token if self._tokens is not None else None
            if current is not None and current != used_token:
                return  # another request already got a new token: just retry with it
            self.dpop.note_challenge(www_authenticate)
            bound = self._tokens is not None and self._tokens.token_type == "DPoP"
            ch = find_challenge(www_authenticate, prefer="dpop" if bound else "bearer")
            if status == 403:
                if ch is None or ch.error != "insufficient_scope":
                    raise AuthorizationError("HTTP 403 from the server (not insufficient_scope)")
                await self._discover(ch)
                # Step-up: keep what we had, add what the server now asks for.
                await self._authorize(merge_scopes(self._scope, ch.scope))
                return
            if used_token is not None and await self._moved(ch):
                # SEP-2352: credentials and tokens belong to the server that issued them.
                self._client = None
                await self._set_tokens(None)
            elif self._tokens is not None and self._tokens.refresh_token \
                    and used_token is not None:
                if await self._refresh():
                    return
            await self._discover(ch)
            await self._authorize(self._select_scope(ch))

    async def aclose(self) -> None:
        """Close the flow's HTTP connections (and a loopback listener, if any)."""
        await self.http.aclose()
        redirect = getattr(self.grant, "redirect", None)
        closer = getattr(redirect, "aclose", None)
        if closer is not None:
            await closer()

    # -- discovery -------------------------------------------------------------------

    async def _discover(self, ch: Challenge | None) -> None:
        hint = ch.resource_metadata if ch is not None else None
        if self.asm is not None and (hint is None or hint == self._prm_url):
            return
        await self._discover_unchecked(hint)
        asm = self.asm
        assert asm is not None
        endpoints = [asm.token_endpoint, asm.authorization_endpoint, asm.registration_endpoint]
        if not self.allow_insecure_http and not all(
                is_secure_endpoint(e) for e in endpoints if e is not None):
            # Codes, secrets and tokens would cross the network in clear text.
            self.asm = None
            raise AuthorizationError("the authorization server's endpoints are not HTTPS")

    async def _moved(self, ch: Challenge | None) -> bool:
        """Whether the resource now names other authorization servers than the one we
        use (read again when a token we sent is refused: SEP-2352's migration). When it
        does, the old server's metadata is forgotten, to be discovered afresh."""
        asm = self.asm
        if asm is None or self.prm is None:
            return False
        prm, _ = await self._fetch_prm(ch.resource_metadata if ch is not None else None)
        if prm is None or any(_same_issuer(asm.issuer, i) for i in prm.authorization_servers):
            return False
        log.info("the resource moved from the authorization server %s to %s",
                 asm.issuer, ", ".join(prm.authorization_servers))
        self.asm = None
        return True

    async def _discover_unchecked(self, hint: str | None) -> None:
        prm, prm_url = await self._fetch_prm(hint)
        if prm is None:
            # 2025-03-26 servers have no protected-resource document: the authorization
            # server is the MCP server's origin, its endpoints at their default paths.
            self.prm, self._prm_url = None, None
            self.resource = self.key
            self.asm = await self._fetch_asm(legacy_metadata_urls(self.server_url), None) \
                or AuthorizationServerMetadata.legacy_defaults(self.server_url)
            return
        if not resource_matches(self.server_url, prm.resource):
            raise AuthorizationError(
                f"the protected resource metadata is for {prm.resource!r}, "
                f"not for {self.server_url!r}: refusing to authorize")
        asm = None
        for issuer in prm.authorization_servers:
            asm = await self._fetch_asm(authorization_server_metadata_urls(issuer), issuer)
            if asm is not None:
                break
        if asm is None:
            raise AuthorizationError("no authorization server metadata found")
        self.prm, self._prm_url, self.asm = prm, prm_url, asm
        self.resource = prm.resource
        self.dpop.note_resource_metadata(prm)

    async def _fetch_prm(self, hint: str | None) -> tuple[ProtectedResourceMetadata | None, str | None]:
        urls = protected_resource_metadata_urls(self.server_url)
        if hint:
            urls = [hint, *[u for u in urls if u != hint]]
        for url in urls:
            answer = await self.http.get_json(url)
            if not answer.ok:
                continue
            try:
                return ProtectedResourceMetadata.from_json(answer.data), url
            except ValueError as exc:
                log.debug("unusable protected resource metadata at %s: %s", url, exc)
        return None, None

    async def _fetch_asm(self, urls: list[str], issuer: str | None) -> AuthorizationServerMetadata | None:
        for url in urls:
            answer = await self.http.get_json(url)
            if not answer.ok:
                continue
            try:
                asm = AuthorizationServerMetadata.from_json(answer.data)
            except ValueError as exc:
                log.debug("unusable authorization server metadata at %s: %s", url, exc)
                continue
            if issuer is not None and not _same_issuer(asm.issuer, issuer):
                # RFC 8414 §3.3: metadata for another issuer must not be used.
                raise AuthorizationError(f"metadata at {url} names issuer {asm.issuer!r}, not {issuer!r}")
            return asm
        return None

    def _select_scope(self, ch: Challenge | None) -> str | None:
        """The MCP scope selection strategy: the challenge's scope, else everything
        the resource lists, else none; plus ``offline_access`` when the
        authorization server offers it and we want refresh tokens."""
        if self.config.scope:
            scope: str | None = self.config.scope
        elif ch is not None and ch.scope:
            scope = ch.scope
        elif self.prm is not None and self.prm.scopes_supported:
            scope = " ".join(self.prm.scopes_supported)
        else:
            scope = None
        asm = self.asm
        if (scope and self.config.want_refresh_tokens and self.grant.interactive
                and asm is not None and "offline_access" in (asm.scopes_supported or [])):
            scope = merge_scopes(scope, "offline_access")
        return scope

    # -- registration and grants --------------------------------------------------------

    def _grant_types(self) -> list[str]:
        types = list(self.grant.grant_types)
        if self.grant.interactive and self.config.want_refresh_tokens:
            types.append("refresh_token")
        return types

    async def _client_info(self, asm: AuthorizationServerMetadata) -> ClientInfo | None:
        if not self.grant.needs_registration:
            if self.config.client_id is None:
                return None
            return ClientInfo(client_id=self.config.client_id, client_secret=self.config.client_secret,
                              token_endpoint_auth_method=self.config.token_endpoint_auth_method)
        if self._client is not None and self._client_issuer == asm.issuer:
            return self._client
        redirect_uri = await self.grant.redirect_uri()
        stored = await self.storage.get_client(asm.issuer)
        if stored is not None and self.config.client_id is None and (
                redirect_uri is None or stored.redirect_uris is None
                or redirect_uri in stored.redirect_uris):
            # (A loopback listener on a new port needs a registration naming that port.)
            self._client, self._client_issuer = stored, asm.issuer
            return stored
        client = await obtain_client(self.http, asm, self.config, redirect_uri, self._grant_types())
        self._client, self._client_issuer = client, asm.issuer
        if self.config.client_id is None:
            await self.storage.set_client(asm.issuer, client)
        return client

    def _state(self, asm: AuthorizationServerMetadata, client: ClientInfo | None,
               scope: str | None, *, dpop: bool) -> FlowState:
        method = choose_auth_method(client, asm, self.config) if client is not None else "none"
        return FlowState(http=self.http, asm=asm, resource=self.resource, scope=scope,
                         client=client, auth_method=method, config=self.config, clock=self.clock,
                         dpop=self.dpop if dpop else None)

    async def _authorize(self, scope: str | None) -> None:
        asm = self.asm
        assert asm is not None
        dpop = self.dpop.for_token_request(asm) is not None
        for attempt in range(2):
            client = await self._client_info(asm)
            try:
                tokens = await self.grant.obtain(self._state(asm, client, scope, dpop=dpop))
                break
            except TokenEndpointError as exc:
                # A stored registration the server forgot: register again, once. (Not
                # for grants without registration: their refusals are final.)
                if (exc.error != "invalid_client" or attempt or self.config.client_id is not None
                        or not self.grant.needs_registration):
                    raise
                self._client = None
                await self.storage.set_client(asm.issuer, None)
        self._scope = scope
        await self._set_tokens(tokens)

    async def _set_tokens(self, tokens: TokenSet | None) -> None:
        self._tokens = tokens
        await self.storage.set_tokens(self.key, tokens)

    async def _refresh(self) -> bool:
        """Use the refresh token (lock held); False (tokens dropped) when refused."""
        tokens = self._tokens
        if tokens is None or not tokens.refresh_token:
            return False
        try:
            if self.asm is None:
                await self._discover(None)
            assert self.asm is not None
            client = await self._client_info(self.asm)
            # A DPoP-bound token's refresh token is bound too (public clients, RFC 9449
            # §5): the refresh request carries a proof by the same key.
            state = self._state(self.asm, client, None, dpop=tokens.token_type == "DPoP")
            fresh = await request_token(
                self.http, self.asm,
                {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token,
                 "resource": self.resource},
                client, state.auth_method, private_key_pem=self.config.private_key_pem,
                algorithm=self.config.signing_algorithm, previous=tokens, now=self.clock(),
                dpop=state.dpop)
        except AuthorizationError as exc:
            log.info("token refresh failed: %s", exc)
            await self._set_tokens(None)
            return False
        await self._set_tokens(fresh)
        return True
