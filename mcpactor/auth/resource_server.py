"""The MCP server as an OAuth 2.1 resource server.

:class:`ResourceServer` plugs into the Streamable HTTP app (``HttpOptions(auth=...)``,
or ``server.run("http", auth=...)``):

* serves the Protected Resource Metadata (RFC 9728) at
  ``/.well-known/oauth-protected-resource<path>`` and at the root form;
* requires ``Authorization: Bearer`` on the MCP endpoints: missing → 401 with
  ``WWW-Authenticate: Bearer resource_metadata=…, scope=…``; invalid or expired → 401
  ``invalid_token``; malformed (several tokens, a token in the query string) → 400
  ``invalid_request``; missing scopes → 403 ``insufficient_scope``;
* checks the per-tool scopes (``@server.tool(scopes=[...])``) of each ``tools/call``
  before the session sees it;
* binds each MCP session to the principal that opened it (a session id is no bearer
  credential), and exposes the token to handlers as ``ctx.auth``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson

from mcpactor.auth.challenge import bearer_challenge
from mcpactor.auth.metadata import PRM_WELL_KNOWN, ProtectedResourceMetadata, canonical_resource
from mcpactor.auth.verifier import AccessToken, InvalidToken, TokenVerifier
from mcpactor.protocol import jsonrpc
from mcpactor.session.state import SessionAuth

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.transports.asgi import Scope, Send
    from mcpactor.transports.http_rules import Headers

__all__ = ["ResourceServer", "current_token"]

#: The validated token of the HTTP request being served (set by :meth:`ResourceServer.guard`).
current_token: contextvars.ContextVar[AccessToken | None] = contextvars.ContextVar(
    "mcpactor_auth_token", default=None)



class ResourceServer:
    """OAuth protection for one MCP server (see the module docstring).

    ``resource`` is the server's canonical URI (e.g. ``https://mcp.example.com/mcp``):
    tokens must carry it as their audience. ``required_scopes`` are needed for any
    request; ``scopes_supported`` are advertised (default: the required ones).
    """

    def __init__(
        self,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier,
        required_scopes: Iterable[str] = (),
        scopes_supported: Sequence[str] | None = None,
        resource_name: str | None = None,
        extra_metadata: dict[str, Any] | None = None,
    ) -> None:
        if not authorization_servers:
            raise ValueError("name at least one authorization server")
        self.resource = canonical_resource(resource)
        self.verifier = verifier
        self.required_scopes = tuple(required_scopes)
        supported = list(scopes_supported) if scopes_supported is not None else (
            list(self.required_scopes) or None)
        extra = dict(extra_metadata or {})
        if resource_name:
            extra["resource_name"] = resource_name
        self.metadata = ProtectedResourceMetadata(
            resource=self.resource, authorization_servers=list(authorization_servers),
            scopes_supported=supported, raw=extra)
        parts = urlsplit(self.resource)
        path = parts.path.rstrip("/")
        self.metadata_paths = {PRM_WELL_KNOWN + path, PRM_WELL_KNOWN}
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{PRM_WELL_KNOWN}{path}"
        self._metadata_body = orjson.dumps(self.metadata.to_json())

    def move_to(self, authorization_servers: Sequence[str], verifier: TokenVerifier) -> None:
        """Hand the resource to other authorization servers (SEP-2352): the metadata
        names them from now on and ``verifier`` (one that accepts their tokens) replaces
        the old one, so a client holding an old token is refused, reads the metadata
        again and registers with the new server."""
        if not authorization_servers:
            raise ValueError("name at least one authorization server")
        self.metadata = attrs.evolve(self.metadata,
                                     authorization_servers=list(authorization_servers))
        self._metadata_body = orjson.dumps(self.metadata.to_json())
        self.verifier = verifier

    # -- HTTP --------------------------------------------------------------------------

    def _challenge(self, error: str | None = None, description: str | None = None,
                   scope: str | None = None) -> bytes:
        if scope is None and self.required_scopes:
            scope = " ".join(self.required_scopes)
        return bearer_challenge(error=error, error_description=description,
                                resource_metadata=self.metadata_url, scope=scope).encode()

    async def _refuse(self, send: Send, status: int, error: str | None, description: str,
                      scope: str | None = None) -> None:
        body = orjson.dumps({"error": error or "invalid_token", "error_description": description})
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode()),
                   (b"www-authenticate", self._challenge(error, description if error else None, scope)),
                   (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def serve_metadata(self, send: Send) -> None:
        """The RFC 9728 document (public: CORS allowed, so browser clients can read it)."""
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._metadata_body)).encode()),
            (b"access-control-allow-origin", b"*"),
            (b"cache-control", b"max-age=300")]})
        await send({"type": "http.response.body", "body": self._metadata_body, "more_body": False})

    async def guard(self, scope: Scope, headers: Headers, protected: bool, send: Send) -> bool:
        """Run before the MCP app: True when this answered the request (a metadata
        document or a refusal), False to go on (then :data:`current_token` is set)."""
        current_token.set(None)
        path = scope.get("path", "")
        if path in self.metadata_paths and scope.get("method") == "GET":
            await self.serve_metadata(send)
            return True
        if not protected:
            return False
        query = scope.get("query_string", b"").decode("latin-1")
        if query and "access_token" in parse_qs(query):
            # OAuth 2.1 §5.1: never in the URI (it ends up in logs and histories).
            await self._refuse(send, 400, "invalid_request", "access tokens are not accepted in the query string")
            return True
        value = headers.get("authorization")
        if value is None:
            await self._refuse(send, 401, None, "authorization required")
            return True
        scheme, _, token = value.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer":
            await self._refuse(send, 401, None, "Bearer authorization required")
            return True
        if not token or " " in token or "," in token:
            await self._refuse(send, 400, "invalid_request", "malformed Authorization header")
            return True
        try:
            access = await self.verifier.verify(token)
        except InvalidToken as exc:
            await self._refuse(send, 401, "invalid_token", str(exc) or "invalid token")
            return True
        if not access.has_scopes(self.required_scopes):
            await self._refuse(send, 403, "insufficient_scope", "the token lacks required scopes",
                               " ".join(self.required_scopes))
            return True
        current_token.set(access)
        return False

    async def check_items(self, tool_scopes: Callable[[str], Sequence[str]],
                          items: Iterable[Any], send: Send) -> bool:
        """Per-tool scopes of the POSTed ``tools/call`` requests: True when refused (403).
        ``tool_scopes``: the scopes a call of a tool needs, by name (the transports pass
        their endpoint's ``tool_scopes``)."""
        access = current_token.get()
        needed: list[str] = []
        for msg in items:
            if not isinstance(msg, jsonrpc.Request) or msg.method != "tools/call":
                continue
            params = msg.params if isinstance(msg.params, dict) else {}
            name = params.get("name")
            for s in tool_scopes(name) if isinstance(name, str) else ():
                if s not in needed:
                    needed.append(s)
        if not needed or (access is not None and access.has_scopes(needed)):
            return False
        # Ask for what the token already has plus what is missing, so one step-up suffices.
        held = sorted(access.scopes) if access is not None else []
        wanted = " ".join(dict.fromkeys([*self.required_scopes, *held, *needed]))
        await self._refuse(send, 403, "insufficient_scope",
                           "this tool needs more scopes", wanted)
        return True

    # -- sessions ----------------------------------------------------------------------

    def bind(self, session: Session) -> None:
        """Remember who opened ``session`` (called as it is created)."""
        session.state.put(SessionAuth(owner=current_token.get()))

    def note_requests(self, session: Session, items: Iterable[Any]) -> None:
        """Remember which token carried each request, so a handler sees the token of its
        own request (``ctx.auth``) even while requests with other tokens run."""
        access = current_token.get()
        if access is None:
            return
        state = session.state.setdefault(SessionAuth, SessionAuth)
        for msg in items:
            if isinstance(msg, jsonrpc.Request):
                state.note(msg.id, access)

    def admits(self, session: Session) -> bool:
        """Whether the current request's principal owns ``session``; updates the token
        the session's handlers see (it may carry more scopes after a step-up)."""
        access = current_token.get()
        state = session.state.get(SessionAuth)
        owner = state.owner if state is not None else None
        if owner is not None and access is not None:
            if owner.principal != access.principal or owner.issuer != access.issuer:
                return False
            assert state is not None
            state.owner = access
        return True
