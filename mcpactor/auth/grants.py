"""How a client gets its first token once discovery and registration are done.

* :class:`AuthorizationCodeGrant`: the user-facing flow, with PKCE S256, ``state`` and
  the ``resource`` indicator (RFC 8707) on both the authorization and token requests.
* :class:`ClientCredentialsGrant`: machine-to-machine (secret or ``private_key_jwt``).
* :class:`CrossAppAccessGrant`: enterprise-managed authorization (SEP-990): an IdP ID
  token exchanged at the IdP for an ID-JAG (RFC 8693), then the JWT bearer grant
  (RFC 7523) at the MCP server's authorization server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlencode

import attrs

from mcpactor.auth.dpop_signer import DPoPSigner
from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.httpio import OAuthHttp
from mcpactor.auth.metadata import AuthorizationServerMetadata
from mcpactor.auth.pkce import new_pkce, new_state
from mcpactor.auth.redirect import RedirectHandler
from mcpactor.auth.registration import ClientConfig
from mcpactor.auth.storage import ClientInfo, TokenSet
from mcpactor.auth.token_endpoint import request_token

__all__ = [
    "AuthorizationCodeGrant",
    "ClientCredentialsGrant",
    "CrossAppAccessGrant",
    "FlowState",
    "Grant",
]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


@attrs.frozen(kw_only=True)
class FlowState:
    """Everything discovery and registration found, handed to a grant."""

    http: OAuthHttp
    asm: AuthorizationServerMetadata
    resource: str
    scope: str | None
    client: ClientInfo | None
    auth_method: str
    config: ClientConfig
    #: The client's clock (expiry times are computed with it).
    clock: Callable[[], float] = time.time
    #: Set (its key chosen) when the token is to be DPoP-bound (RFC 9449).
    dpop: DPoPSigner | None = None

    async def token(self, form: dict[str, str]) -> TokenSet:
        """POST ``form`` to the token endpoint with this client's authentication (and
        a DPoP proof when the token is to be bound)."""
        return await request_token(
            self.http, self.asm, form, self.client, self.auth_method,
            private_key_pem=self.config.private_key_pem,
            algorithm=self.config.signing_algorithm, now=self.clock(), dpop=self.dpop)


class Grant(Protocol):
    """One way of obtaining tokens."""

    #: Whether a user takes part (then refresh tokens and offline_access are asked for).
    interactive: bool
    #: Grant types to register.
    grant_types: list[str]
    #: Whether this grant needs a client id from registration (pre-registered otherwise).
    needs_registration: bool

    async def redirect_uri(self) -> str | None:
        """The redirect URI to register, if the grant uses one."""
        ...

    async def obtain(self, state: FlowState) -> TokenSet:
        """Run the grant; the tokens."""
        ...


class AuthorizationCodeGrant:
    """Authorization code + PKCE S256, through a :class:`RedirectHandler`."""

    interactive = True
    grant_types = ["authorization_code"]
    needs_registration = True

    def __init__(self, redirect: RedirectHandler) -> None:
        self.redirect = redirect

    async def redirect_uri(self) -> str | None:
        """See :class:`Grant`."""
        return await self.redirect.redirect_uri()

    async def obtain(self, state: FlowState) -> TokenSet:
        """See :class:`Grant`."""
        asm = state.asm
        if asm.authorization_endpoint is None:
            raise AuthorizationError("the authorization server has no authorization endpoint")
        # MCP 2025-11-25: refuse to go on without PKCE S256 support being advertised.
        if "S256" not in (asm.code_challenge_methods_supported or []):
            raise AuthorizationError("the authorization server does not advertise PKCE S256")
        assert state.client is not None
        pkce = new_pkce()
        expected_state = new_state()
        redirect_uri = await self.redirect.redirect_uri()
        params = {
            "response_type": "code",
            "client_id": state.client.client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": pkce.challenge,
            "code_challenge_method": pkce.method,
            "state": expected_state,
            "resource": state.resource,
        }
        if state.scope:
            params["scope"] = state.scope
        if state.dpop is not None and state.dpop.key is not None:
            # RFC 9449 §10: the code is bound to our key, so a stolen code is no use.
            params["dpop_jkt"] = state.dpop.key.thumbprint
        sep = "&" if "?" in asm.authorization_endpoint else "?"
        answer = await self.redirect.authorize(asm.authorization_endpoint + sep + urlencode(params))
        if answer.state != expected_state:
            raise AuthorizationError("the authorization response's state does not match")
        # RFC 9207 (MCP 2026-07-28): a mix-up attack hands us another server's code. The
        # issuer is compared as a plain string, with no URL normalisation.
        if answer.iss is None:
            if asm.authorization_response_iss_parameter_supported:
                raise AuthorizationError(
                    "the authorization response has no iss, though the authorization "
                    "server says it always sends one")
        elif not asm.synthetic and answer.iss != asm.issuer:
            raise AuthorizationError("the authorization response names another issuer")
        return await state.token({
            "grant_type": "authorization_code",
            "code": answer.code,
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.verifier,
            "resource": state.resource,
        })


class ClientCredentialsGrant:
    """``client_credentials`` with pre-registered credentials (secret or private key)."""

    interactive = False
    grant_types = ["client_credentials"]
    needs_registration = False

    async def redirect_uri(self) -> str | None:
        """See :class:`Grant`."""
        return None

    async def obtain(self, state: FlowState) -> TokenSet:
        """See :class:`Grant`."""
        form = {"grant_type": "client_credentials", "resource": state.resource}
        if state.scope:
            form["scope"] = state.scope
        return await state.token(form)


class CrossAppAccessGrant:
    """SEP-990: trade an IdP ID token for an ID-JAG at the IdP, the ID-JAG for an
    access token at the MCP server's authorization server."""

    interactive = False
    grant_types = [JWT_BEARER]
    needs_registration = False

    def __init__(self, *, idp_token_endpoint: str, id_token: str, idp_client_id: str,
                 idp_client_secret: str | None = None) -> None:
        self.idp_token_endpoint = idp_token_endpoint
        self.id_token = id_token
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def redirect_uri(self) -> str | None:
        """See :class:`Grant`."""
        return None

    async def obtain(self, state: FlowState) -> TokenSet:
        """See :class:`Grant`."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": self.id_token,
            "subject_token_type": ID_TOKEN,
            "audience": state.asm.issuer,
            "resource": state.resource,
            "client_id": self.idp_client_id,
        }
        if self.idp_client_secret:
            form["client_secret"] = self.idp_client_secret
        if state.scope:
            form["scope"] = state.scope
        answer = await state.http.post_form(self.idp_token_endpoint, form)
        data = answer.data
        if not answer.ok or not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            err = data.get("error") if isinstance(data, dict) else None
            raise AuthorizationError(f"IdP token exchange failed: HTTP {answer.status}"
                                     + (f" ({err})" if err else ""))
        bearer = {"grant_type": JWT_BEARER, "assertion": data["access_token"]}
        if state.scope:
            bearer["scope"] = state.scope
        return await state.token(bearer)
