"""Workload identity federation (SEP-1933): :class:`WorkloadIdentityGrant`.

A workload (a pod, a CI job, a cloud function) already holds a JWT its platform issued
it: a Kubernetes projected service account token, a SPIFFE JWT-SVID, a cloud identity
token. The grant presents that JWT to the MCP server's authorization server as an
RFC 7523 authorization grant (``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``,
``assertion``, ``resource``): no client registration, no client secret.

Where the JWT comes from is the application's: a fixed string, a file read afresh for
every token request (platforms rotate them in place), or a function. A refusal
(``invalid_grant``, ``invalid_scope``, ``unauthorized_client``...) is raised as the
:class:`~mcpactor.auth.TokenEndpointError` it is: the grant never switches to another
grant type, and never sends an assertion the server refused again.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from mcpactor.auth.errors import AuthorizationError, TokenEndpointError
from mcpactor.auth.grants import JWT_BEARER, FlowState
from mcpactor.auth.storage import TokenSet

__all__ = ["AssertionSource", "WorkloadIdentityGrant"]

#: A function giving the workload's JWT: called before each token request with the
#: authorization server's issuer (the audience the JWT is for); may be async.
AssertionSource = Callable[[str], str | Awaitable[str]]

# A JWS (three parts) or a JWE (five) in compact form: base64url segments and dots.
_JWT: Final = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*){2}(?:(?:\.[A-Za-z0-9_-]*){2})?")
#: How many refused (assertion, scope) pairs are remembered.
_REMEMBERED: Final = 16
#: RFC 6749 §5.2 refusals: final for that assertion (unlike ``server_error``,
#: ``temporarily_unavailable`` or a bare HTTP error, which a later try may get past).
_FINAL: Final = frozenset({"invalid_request", "invalid_client", "invalid_grant",
                           "unauthorized_client", "unsupported_grant_type", "invalid_scope"})


def _is_jwt(value: str) -> bool:
    return _JWT.fullmatch(value) is not None


class WorkloadIdentityGrant:
    """SEP-1933: the workload's platform-issued JWT as an RFC 7523 grant.

    Give exactly one source: ``assertion`` (the JWT itself, or an
    :data:`AssertionSource` function) or ``assertion_file`` (a path read at every token
    request, as Kubernetes rotates projected tokens in place). A pre-registered
    ``ClientConfig(client_id=...)`` is sent along when there is one; none is needed.
    """

    interactive = False
    grant_types = [JWT_BEARER]
    needs_registration = False

    def __init__(self, assertion: str | AssertionSource | None = None, *,
                 assertion_file: str | os.PathLike[str] | None = None) -> None:
        if (assertion is None) == (assertion_file is None):
            raise ValueError("WorkloadIdentityGrant needs exactly one assertion source: "
                             "assertion= (the JWT, or a function giving it) or "
                             "assertion_file= (a file holding it)")
        if isinstance(assertion, str):
            assertion = assertion.strip()
            if not _is_jwt(assertion):
                raise ValueError("assertion= is not a JWT (base64url parts joined by dots): "
                                 "pass the token itself, or assertion_file= for a file that "
                                 "holds it")
        elif assertion is not None and not callable(assertion):
            raise TypeError(f"assertion= must be a JWT string or a function giving one, "
                            f"not {type(assertion).__name__}")
        self._assertion = assertion
        self._file = os.fspath(assertion_file) if assertion_file is not None else None
        # Digests of (assertion, scope) the server refused, with its refusal: a refused
        # JWT is not sent again (SEP-1933 clients surface the error, never retry).
        self._refused: dict[bytes, TokenEndpointError] = {}

    async def redirect_uri(self) -> str | None:
        """See :class:`~mcpactor.auth.grants.Grant`: no redirect."""
        return None

    async def assertion_for(self, audience: str) -> str:
        """The workload's JWT now, from its source."""
        if self._file is not None:
            try:
                value = (await trio.Path(self._file).read_text(encoding="utf-8")).strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise AuthorizationError(
                    f"cannot read the workload assertion from {self._file}: {exc}") from exc
            where = f"the file {self._file}"
        elif isinstance(self._assertion, str):
            return self._assertion
        else:
            assert self._assertion is not None
            try:
                got = self._assertion(audience)
                if inspect.isawaitable(got):
                    got = await got
            except AuthorizationError:
                raise
            except Exception as exc:
                raise AuthorizationError(f"the workload assertion source failed: {exc!r}") from exc
            if not isinstance(got, str):
                raise AuthorizationError(f"the workload assertion source returned a "
                                         f"{type(got).__name__}, not a JWT string")
            value = got.strip()
            where = "the workload assertion source"
        if not _is_jwt(value):
            raise AuthorizationError(f"{where} holds no JWT (base64url parts joined by dots)")
        return value

    async def obtain(self, state: FlowState) -> TokenSet:
        """See :class:`~mcpactor.auth.grants.Grant`."""
        asm = state.asm
        if asm.grant_types_supported is not None and JWT_BEARER not in asm.grant_types_supported:
            raise AuthorizationError(
                "the authorization server does not offer the JWT bearer grant (RFC 7523) "
                "that workload identity federation uses")
        assertion = await self.assertion_for(asm.issuer)
        digest = hashlib.sha256(f"{assertion}\n{state.scope or ''}".encode()).digest()
        refused = self._refused.get(digest)
        if refused is not None:
            raise TokenEndpointError(
                refused.error, (refused.description or "refused")
                + "; the same assertion is not sent again", refused.status)
        form = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": state.resource}
        if state.scope:
            form["scope"] = state.scope
        try:
            return await state.token(form)
        except TokenEndpointError as exc:
            if exc.error not in _FINAL:
                raise
            if len(self._refused) >= _REMEMBERED:
                self._refused.pop(next(iter(self._refused)))
            self._refused[digest] = exc
            raise
