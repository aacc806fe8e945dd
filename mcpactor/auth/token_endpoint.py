"""Token endpoint requests (RFC 6749 §3.2) with client authentication:
``client_secret_basic``, ``client_secret_post``, ``none`` and ``private_key_jwt``
(RFC 7523, signed with PyJWT); with a DPoP proof when the token is to be DPoP-bound
(RFC 9449 §5), sent once more with the server's nonce when it asks for one (§8)."""

from __future__ import annotations

import base64
import time
import uuid
from urllib.parse import quote

from mcpactor.auth.dpop_signer import DPoPSigner
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
                        previous: TokenSet | None = None, now: float | None = None,
                        dpop: DPoPSigner | None = None) -> TokenSet:
    """POST to the token endpoint; the tokens, or :class:`TokenEndpointError`.

    ``dpop`` (its key chosen): ask for a token bound to that key.
    """
    for attempt in range(2):
        # Built afresh each time: a retry carries a new client assertion and proof.
        body = dict(form)
        headers: list[tuple[str, str]] = []
        if client is not None:
            headers = authenticate(method, client, asm, body, private_key_pem=private_key_pem,
                                   algorithm=algorithm)
        if dpop is not None:
            headers.append(("dpop", dpop.proof("POST", asm.token_endpoint, endpoint=True)))
        answer = await http.post_form(asm.token_endpoint, body, headers)
        data = answer.data
        fresh_nonce = dpop is not None and dpop.note_nonce(asm.token_endpoint, answer.headers,
                                                           endpoint=True)
        if answer.ok:
            break
        error = data.get("error") if isinstance(data, dict) else None
        if error == "use_dpop_nonce" and fresh_nonce and attempt == 0:
            continue  # RFC 9449 §8: the same request, its proof carrying the nonce
        if isinstance(error, str):
            desc = data.get("error_description")
            raise TokenEndpointError(error, desc if isinstance(desc, str) else None,
                                     answer.status)
        raise TokenEndpointError("http_error", f"HTTP {answer.status}", answer.status)
    jkt = dpop.key.thumbprint if dpop is not None and dpop.key is not None else None
    try:
        tokens = TokenSet.from_response(data, previous=previous, now=now, dpop_jkt=jkt)
    except ValueError as exc:
        raise AuthorizationError(f"token endpoint: {exc}") from exc
    if dpop is not None and tokens.token_type != "DPoP" and dpop.bearer_refused:
        raise AuthorizationError(
            "the authorization server issued a Bearer token where a DPoP-bound one was "
            "asked for" + (" (dpop='always')" if dpop.mode == "always"
                           else " (the server accepts only DPoP-bound tokens)"))
    return tokens
