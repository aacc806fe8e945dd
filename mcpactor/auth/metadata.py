"""Discovery documents and the URLs they live at (sans-I/O).

* OAuth 2.0 Protected Resource Metadata (RFC 9728): path-based well-known URL first,
  then the root one (MCP 2025-06-18+).
* Authorization server metadata: RFC 8414 then OpenID Connect Discovery, in the order
  the MCP spec (2025-11-25) gives for issuers with and without a path.
* The canonical resource URI (RFC 8707 §2) and the check that a protected-resource
  document really describes the server we talk to.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

__all__ = [
    "AuthorizationServerMetadata",
    "ProtectedResourceMetadata",
    "authorization_server_metadata_urls",
    "canonical_resource",
    "is_secure_endpoint",
    "legacy_metadata_urls",
    "origin_of",
    "protected_resource_metadata_urls",
    "resource_matches",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


def _split(url: str) -> tuple[str, str, str]:
    """``(scheme, netloc, path)`` with scheme and host lower-cased, default port dropped."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        raise ValueError(f"not an absolute URL: {url!r}")
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if parts.port in (None, default) else f"{host}:{parts.port}"
    return scheme, netloc, parts.path


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL."""
    scheme, netloc, _ = _split(url)
    return f"{scheme}://{netloc}"


def canonical_resource(url: str) -> str:
    """The canonical URI of a server (RFC 8707 §2, MCP "Canonical Server URI"):
    lower-case scheme and host, no fragment, no query, no lone trailing slash."""
    scheme, netloc, path = _split(url)
    if path == "/":
        path = ""
    return urlunsplit((scheme, netloc, path, "", ""))


def resource_matches(server_url: str, resource: str) -> bool:
    """Whether a protected-resource document's ``resource`` covers ``server_url``:
    same origin, and its path is the server's path or a parent of it."""
    try:
        s_scheme, s_net, s_path = _split(server_url)
        r_scheme, r_net, r_path = _split(resource)
    except ValueError:
        return False
    if (s_scheme, s_net) != (r_scheme, r_net):
        return False
    r_path = r_path.rstrip("/")
    s_path = s_path.rstrip("/")
    return s_path == r_path or s_path.startswith(r_path + "/")


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def is_secure_endpoint(url: str) -> bool:
    """HTTPS, or plain HTTP to a loopback host (OAuth 2.1 §1.5; RFC 8252 §8.3)."""
    parts = urlsplit(url)
    if parts.scheme.lower() == "https":
        return True
    return parts.scheme.lower() == "http" and (parts.hostname or "").lower() in _LOOPBACK


def protected_resource_metadata_urls(server_url: str) -> list[str]:
    """Where to look for the server's RFC 9728 document, most specific first."""
    scheme, netloc, path = _split(server_url)
    root = f"{scheme}://{netloc}{PRM_WELL_KNOWN}"
    path = path.rstrip("/")
    return [f"{scheme}://{netloc}{PRM_WELL_KNOWN}{path}", root] if path else [root]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an authorization server's metadata (MCP 2025-11-25 order):
    with a path ``/t``: ``oauth-authorization-server/t``, ``openid-configuration/t``,
    ``/t/.well-known/openid-configuration``; without one: the two root documents."""
    scheme, netloc, path = _split(issuer)
    base = f"{scheme}://{netloc}"
    path = path.rstrip("/")
    if path:
        return [
            f"{base}{OAUTH_WELL_KNOWN}{path}",
            f"{base}{OIDC_WELL_KNOWN}{path}",
            f"{base}{path}{OIDC_WELL_KNOWN}",
        ]
    return [f"{base}{OAUTH_WELL_KNOWN}", f"{base}{OIDC_WELL_KNOWN}"]


def legacy_metadata_urls(server_url: str) -> list[str]:
    """2025-03-26 back-compat: no protected-resource document, so the authorization
    server is the MCP server's origin (its path discarded)."""
    return [f"{origin_of(server_url)}{OAUTH_WELL_KNOWN}"]


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


@attrs.frozen(kw_only=True)
class ProtectedResourceMetadata:
    """The parts of an RFC 9728 document a client uses."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str] | None = None
    #: RFC 9728 §2 / RFC 9449: the DPoP algorithms the resource takes proofs in.
    dpop_signing_alg_values_supported: list[str] | None = None
    #: RFC 9728 §2: the resource takes DPoP-bound access tokens only.
    dpop_bound_access_tokens_required: bool = False
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> ProtectedResourceMetadata:
        """Validate a decoded document; ValueError when it is unusable."""
        if not isinstance(data, dict):
            raise ValueError("protected resource metadata is not a JSON object")
        resource = data.get("resource")
        servers = _str_list(data.get("authorization_servers"))
        if not isinstance(resource, str) or not resource:
            raise ValueError("protected resource metadata has no 'resource'")
        if not servers:
            raise ValueError("protected resource metadata names no authorization server")
        return cls(resource=resource, authorization_servers=servers,
                   scopes_supported=_str_list(data.get("scopes_supported")),
                   dpop_signing_alg_values_supported=_str_list(
                       data.get("dpop_signing_alg_values_supported")),
                   dpop_bound_access_tokens_required=data.get(
                       "dpop_bound_access_tokens_required") is True,
                   raw=data)

    def to_json(self) -> dict[str, Any]:
        """The document as served (server side)."""
        out: dict[str, Any] = dict(self.raw)
        out.update(resource=self.resource, authorization_servers=self.authorization_servers)
        if self.scopes_supported is not None:
            out["scopes_supported"] = self.scopes_supported
        if self.dpop_signing_alg_values_supported is not None:
            out["dpop_signing_alg_values_supported"] = self.dpop_signing_alg_values_supported
        if self.dpop_bound_access_tokens_required:
            out["dpop_bound_access_tokens_required"] = True
        out.setdefault("bearer_methods_supported", ["header"])
        return out


@attrs.frozen(kw_only=True)
class AuthorizationServerMetadata:
    """The parts of RFC 8414 / OpenID Connect Discovery metadata a client uses."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    client_id_metadata_document_supported: bool = False
    #: RFC 9207: the server puts ``iss`` in every authorization response.
    authorization_response_iss_parameter_supported: bool = False
    #: RFC 9449 §5.1: the JWS algorithms the server takes DPoP proofs in (its
    #: presence says the server issues DPoP-bound tokens).
    dpop_signing_alg_values_supported: list[str] | None = None
    #: Made up from the 2025-03-26 default endpoints, not fetched.
    synthetic: bool = False
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> AuthorizationServerMetadata:
        """Validate a decoded document; ValueError when it is unusable."""
        if not isinstance(data, dict):
            raise ValueError("authorization server metadata is not a JSON object")
        issuer = data.get("issuer")
        token = data.get("token_endpoint")
        if not isinstance(issuer, str) or not isinstance(token, str):
            raise ValueError("authorization server metadata lacks issuer or token_endpoint")
        authz = data.get("authorization_endpoint")
        reg = data.get("registration_endpoint")
        return cls(
            issuer=issuer,
            authorization_endpoint=authz if isinstance(authz, str) else None,
            token_endpoint=token,
            registration_endpoint=reg if isinstance(reg, str) else None,
            scopes_supported=_str_list(data.get("scopes_supported")),
            grant_types_supported=_str_list(data.get("grant_types_supported")),
            token_endpoint_auth_methods_supported=_str_list(
                data.get("token_endpoint_auth_methods_supported")),
            code_challenge_methods_supported=_str_list(data.get("code_challenge_methods_supported")),
            client_id_metadata_document_supported=data.get(
                "client_id_metadata_document_supported") is True,
            authorization_response_iss_parameter_supported=data.get(
                "authorization_response_iss_parameter_supported") is True,
            dpop_signing_alg_values_supported=_str_list(
                data.get("dpop_signing_alg_values_supported")),
            raw=data,
        )

    @classmethod
    def legacy_defaults(cls, server_url: str) -> AuthorizationServerMetadata:
        """2025-03-26: no metadata anywhere, so the default endpoints at the origin."""
        base = origin_of(server_url)
        return cls(issuer=base, authorization_endpoint=f"{base}/authorize",
                   token_endpoint=f"{base}/token", registration_endpoint=f"{base}/register",
                   code_challenge_methods_supported=["S256"], synthetic=True)
