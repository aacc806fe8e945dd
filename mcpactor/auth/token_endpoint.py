"""Token endpoint requests (RFC 6749 §3.2) with client authentication:
``client_secret_basic``, ``client_secret_post``, ``none`` and ``private_key_jwt``
(RFC 7523, signed with PyJWT)."""

from __future__ import annotations

import base64
import time
import uuid
from urllib.parse import quote

from mcpactor.auth.errors import AuthorizationError, TokenEndpointError
from mcpactor.auth.httpio import OAuthHttp
from mcpactor.auth.metadata import AuthorizationServerMetadata
from mcpactor.auth.storage import ClientInfo, TokenSet
from mcpactor.extras import require

__all__ = ["JWT_BEARER_ASSERTION", "client_assertion", "request_token"]

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def client_assertion(client_id: str, audience: str, private_key_pem: str, algorithm: str,
                     *, lifetime: float = 300.0) -> str:
    """A signed JWT authenticating the client (RFC 7523 §2.2; audience = the issuer).
    Needs PyJWT (``mcpactor[auth]``)."""
    jwt = require("jwt", "private_key_jwt client authentication")
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
              "exp": now + int(lifetime), "jti": str(uuid.uuid4())}
    try:
        assertion: str = jwt.encode(claims, private_key_pem, algorithm=algorithm)
        return assertion
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise AuthorizationError(f"cannot sign the client assertion: {exc}") from exc


def _basic(client_id: str, secret: str) -> str:
    # RFC 6749 §2.3.1: both parts form-urlencoded before the Basic encoding.
    raw = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


def authenticate(method: str, client: ClientInfo, asm: AuthorizationServerMetadata,
                 form: dict[str, str], *, private_key_pem: str | None = None,
                 algorithm: str = "ES256") -> list[tuple[str, str]]:
    """Add the client's credentials to ``form`` (in place); return extra headers."""
    if method == "client_secret_basic" and client.client_secret:
        return [("authorization", _basic(client.client_id, client.client_secret))]
    form["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret:
        form["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        if not private_key_pem:
            raise AuthorizationError("private_key_jwt needs a private key")
        form["client_assertion_type"] = JWT_BEARER_ASSERTION
        form["client_assertion"] = client_assertion(
            client.client_id, asm.issuer, private_key_pem, algorithm)
    return []


async def request_token(http: OAuthHttp, asm: AuthorizationServerMetadata, form: dict[str, str],
                        client: ClientInfo | None, method: str, *,
                        private_key_pem: str | None = None, algorithm: str = "ES256",
                        previous: TokenSet | None = None, now: float | None = None) -> TokenSet:
    """POST to the token endpoint; the tokens, or :class:`TokenEndpointError`."""
    headers: list[tuple[str, str]] = []
    if client is not None:
        headers = authenticate(method, client, asm, form, private_key_pem=private_key_pem,
                               algorithm=algorithm)
    answer = await http.post_form(asm.token_endpoint, form, headers)
    data = answer.data
    if not answer.ok:
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            desc = data.get("error_description")
            raise TokenEndpointError(data["error"], desc if isinstance(desc, str) else None,
                                     answer.status)
        raise TokenEndpointError("http_error", f"HTTP {answer.status}", answer.status)
    try:
        return TokenSet.from_response(data, previous=previous, now=now)
    except ValueError as exc:
        raise AuthorizationError(f"token endpoint: {exc}") from exc
