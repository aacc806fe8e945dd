"""Getting a client id: pre-registered credentials, a Client ID Metadata Document URL,
or Dynamic Client Registration (RFC 7591) — and picking how to authenticate at the
token endpoint."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import attrs

from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.httpio import OAuthHttp
from mcpactor.auth.metadata import AuthorizationServerMetadata
from mcpactor.auth.storage import ClientInfo

__all__ = [
    "ClientConfig", "application_type", "choose_auth_method", "client_metadata", "obtain_client",
]

#: Token endpoint client authentication methods we implement, in order of preference.
SECRET_METHODS = ("client_secret_basic", "client_secret_post")


@attrs.frozen(kw_only=True)
class ClientConfig:
    """What the application knows about itself as an OAuth client."""

    #: Pre-registered credentials (used as they are; no registration).
    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    #: An HTTPS URL serving this client's metadata document (used as ``client_id``
    #: when the server advertises ``client_id_metadata_document_supported``).
    client_metadata_url: str | None = None
    client_name: str = "mcpactor"
    #: PEM private key for ``private_key_jwt`` (RFC 7523) client authentication.
    private_key_pem: str | None = attrs.field(default=None, repr=False)
    signing_algorithm: str = "ES256"
    #: Ask for refresh tokens (``refresh_token`` grant type, ``offline_access``).
    want_refresh_tokens: bool = True
    #: Overrides the scope the flow would choose.
    scope: str | None = None
    #: More registration metadata (e.g. ``client_uri``, ``logo_uri``).
    extra_metadata: dict[str, Any] = attrs.field(factory=dict)
    #: The OpenID Connect ``application_type`` registered (``"native"`` or ``"web"``);
    #: None picks it from the redirect URI (see :func:`application_type`).
    application_type: str | None = None


def application_type(redirect_uri: str | None) -> str:
    """The ``application_type`` a client registers (MCP 2026-07-28: always sent, since
    OIDC servers take a missing one as ``"web"`` and then refuse loopback redirects):
    ``"native"`` for a loopback or private-scheme redirect (desktop apps, CLIs),
    ``"web"`` for a remote HTTPS one or none at all (a server-side client)."""
    if redirect_uri is None:
        return "web"
    parts = urlsplit(redirect_uri)
    if parts.scheme not in ("http", "https"):
        return "native"
    host = (parts.hostname or "").lower()
    return "native" if host == "localhost" or _is_loopback(host) else "web"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_metadata(config: ClientConfig, redirect_uri: str | None,
                    auth_method: str, grant_types: list[str]) -> dict[str, Any]:
    """The RFC 7591 client metadata we register (and would serve as a CIMD)."""
    data: dict[str, Any] = {
        "client_name": config.client_name,
        "grant_types": grant_types,
        "token_endpoint_auth_method": auth_method,
        "application_type": config.application_type or application_type(redirect_uri),
    }
    if redirect_uri is not None:
        data["redirect_uris"] = [redirect_uri]
        data["response_types"] = ["code"]
    data.update(config.extra_metadata)
    return data


def _registration_method(asm: AuthorizationServerMetadata) -> str:
    supported = asm.token_endpoint_auth_methods_supported
    if supported is None:
        return "client_secret_basic"  # RFC 8414's default when the list is absent
    for m in ("none", *SECRET_METHODS):
        if m in supported:
            return m
    return supported[0] if supported else "none"


def choose_auth_method(client: ClientInfo, asm: AuthorizationServerMetadata,
                       config: ClientConfig) -> str:
    """How to authenticate at the token endpoint: what the registration says, else
    the best of what the server supports for the credentials we hold."""
    if client.token_endpoint_auth_method:
        return client.token_endpoint_auth_method
    if config.token_endpoint_auth_method:
        return config.token_endpoint_auth_method
    if config.private_key_pem:
        return "private_key_jwt"
    if not client.client_secret:
        return "none"
    supported = asm.token_endpoint_auth_methods_supported
    if supported is None:
        return "client_secret_basic"
    for m in SECRET_METHODS:
        if m in supported:
            return m
    return "client_secret_basic" if "none" not in supported else "none"


async def register(http: OAuthHttp, asm: AuthorizationServerMetadata, config: ClientConfig,
                   redirect_uri: str | None, grant_types: list[str]) -> ClientInfo:
    """Dynamic Client Registration (RFC 7591)."""
    assert asm.registration_endpoint is not None
    body = client_metadata(config, redirect_uri, _registration_method(asm), grant_types)
    if config.scope:
        body["scope"] = config.scope
    answer = await http.post_json(asm.registration_endpoint, body)
    if not answer.ok:
        err = answer.data.get("error") if isinstance(answer.data, dict) else None
        raise AuthorizationError(f"client registration failed: HTTP {answer.status}"
                                 + (f" ({err})" if err else ""))
    try:
        return ClientInfo.from_json(answer.data)
    except ValueError as exc:
        raise AuthorizationError(f"client registration: {exc}") from exc


async def obtain_client(http: OAuthHttp, asm: AuthorizationServerMetadata, config: ClientConfig,
                        redirect_uri: str | None, grant_types: list[str]) -> ClientInfo:
    """A client id by the first way that applies: pre-registered, CIMD, DCR."""
    if config.client_id is not None:
        return ClientInfo(client_id=config.client_id, client_secret=config.client_secret,
                          token_endpoint_auth_method=config.token_endpoint_auth_method)
    if config.client_metadata_url and asm.client_id_metadata_document_supported:
        return ClientInfo(client_id=config.client_metadata_url,
                          token_endpoint_auth_method="private_key_jwt" if config.private_key_pem else "none")
    if asm.registration_endpoint:
        return await register(http, asm, config, redirect_uri, grant_types)
    raise AuthorizationError(
        "no client id: the authorization server offers neither dynamic registration nor "
        "client id metadata documents, and no pre-registered client_id was configured")
