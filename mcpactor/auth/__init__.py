"""OAuth 2.1 authorization for MCP over HTTP: the client flow and the resource server.

Client: ``connect_http(url, auth=OAuthClient(url, ...))``, with DPoP-bound tokens
(``OAuthClient(dpop=..., dpop_key=DPoPKey...)``) and the grants: authorization code,
client credentials, enterprise-managed (``CrossAppAccessGrant``), workload identity
federation (``WorkloadIdentityGrant``). Server: see :mod:`mcpactor.auth.resource_server`.
"""

from __future__ import annotations

from mcpactor.auth.challenge import Challenge, bearer_challenge, parse_www_authenticate
from mcpactor.auth.client_flow import OAuthClient
from mcpactor.auth.dpop import DPoPKey
from mcpactor.auth.errors import AuthorizationError, TokenEndpointError
from mcpactor.auth.grants import AuthorizationCodeGrant, ClientCredentialsGrant, CrossAppAccessGrant
from mcpactor.auth.http_auth import AuthorizedPool
from mcpactor.auth.redirect import HeadlessRedirectHandler, LoopbackRedirectHandler
from mcpactor.auth.registration import ClientConfig
from mcpactor.auth.storage import (
    ClientInfo,
    FileTokenStorage,
    InMemoryTokenStorage,
    TokenSet,
    TokenStorage,
)
from mcpactor.auth.workload import AssertionSource, WorkloadIdentityGrant

__all__ = [
    "AssertionSource",
    "AuthorizationCodeGrant",
    "AuthorizationError",
    "AuthorizedPool",
    "Challenge",
    "ClientConfig",
    "ClientCredentialsGrant",
    "ClientInfo",
    "CrossAppAccessGrant",
    "DPoPKey",
    "FileTokenStorage",
    "HeadlessRedirectHandler",
    "InMemoryTokenStorage",
    "LoopbackRedirectHandler",
    "OAuthClient",
    "TokenEndpointError",
    "TokenSet",
    "TokenStorage",
    "WorkloadIdentityGrant",
    "bearer_challenge",
    "parse_www_authenticate",
]
