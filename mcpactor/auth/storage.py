"""Where a client keeps its tokens and client registrations.

:class:`TokenStorage` is the interface; :class:`InMemoryTokenStorage` the default and
:class:`FileTokenStorage` a JSON file created with mode 0600. Tokens are kept per
resource (canonical server URI), client registrations per authorization server
(issuer): a registration is worth reusing across servers of one issuer, a token never
across resources.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Protocol

import attrs
import trio

__all__ = ["ClientInfo", "FileTokenStorage", "InMemoryTokenStorage", "TokenSet", "TokenStorage"]


@attrs.frozen(kw_only=True)
class TokenSet:
    """An access token and what came with it. Secrets stay out of ``repr``."""

    access_token: str = attrs.field(repr=False)
    #: ``Bearer``, or ``DPoP`` for a token bound to a DPoP key (RFC 9449).
    token_type: str = "Bearer"
    refresh_token: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    #: Unix time after which the access token is expired (None: unknown).
    expires_at: float | None = None
    #: For a DPoP token: the thumbprint of the key it is bound to (another key's
    #: proofs cannot use it).
    dpop_jkt: str | None = None

    @classmethod
    def from_response(cls, data: Any, *, now: float | None = None,
                      previous: TokenSet | None = None,
                      dpop_jkt: str | None = None) -> TokenSet:
        """Parse a token endpoint's JSON answer (RFC 6749 §5.1). A refresh answer
        without a new refresh token keeps the previous one (no rotation happened).
        ``dpop_jkt``: the thumbprint of the key the request's DPoP proof was signed
        with (a ``DPoP`` token type is refused without one)."""
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise ValueError("token response has no access_token")
        token_type = data.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
            raise ValueError(f"unsupported token_type {token_type!r}")
        bound = token_type.lower() == "dpop"
        if bound and dpop_jkt is None:
            raise ValueError("token_type DPoP, though the request carried no DPoP proof")
        expires_in = data.get("expires_in")
        expires_at = None
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            expires_at = (time.time() if now is None else now) + float(expires_in)
        refresh = data.get("refresh_token")
        if not isinstance(refresh, str):
            refresh = previous.refresh_token if previous is not None else None
        scope = data.get("scope")
        return cls(access_token=data["access_token"], token_type="DPoP" if bound else "Bearer",
                   refresh_token=refresh, scope=scope if isinstance(scope, str) else None,
                   expires_at=expires_at, dpop_jkt=dpop_jkt if bound else None)

    def expired(self, now: float, skew: float = 30.0) -> bool:
        """Whether the token is (about to be) expired."""
        return self.expires_at is not None and now + skew >= self.expires_at

    def to_json(self) -> dict[str, Any]:
        """For storage."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class ClientInfo:
    """A client's registration at one authorization server."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    client_secret_expires_at: float | None = None
    redirect_uris: list[str] | None = None

    @classmethod
    def from_json(cls, data: Any) -> ClientInfo:
        """From a registration response (RFC 7591 §3.2.1) or storage."""
        if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
            raise ValueError("client information has no client_id")
        secret = data.get("client_secret")
        method = data.get("token_endpoint_auth_method")
        expires = data.get("client_secret_expires_at")
        uris = data.get("redirect_uris")
        return cls(
            client_id=data["client_id"],
            client_secret=secret if isinstance(secret, str) else None,
            token_endpoint_auth_method=method if isinstance(method, str) else None,
            client_secret_expires_at=float(expires) if isinstance(expires, (int, float)) and expires else None,
            redirect_uris=list(uris) if isinstance(uris, list) else None,
        )

    def to_json(self) -> dict[str, Any]:
        """For storage."""
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


class TokenStorage(Protocol):
    """Persistence for tokens (per resource) and client registrations (per issuer)."""

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """The tokens kept for a resource."""
        ...

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """Keep (or with None, forget) the tokens of a resource."""
        ...

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """The registration kept for an authorization server."""
        ...

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep (or with None, forget) the registration at an authorization server."""
        ...


class InMemoryTokenStorage:
    """Lives as long as the process: the default."""

    def __init__(self) -> None:
        self._tokens: dict[str, TokenSet] = {}
        self._clients: dict[str, ClientInfo] = {}

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """See :class:`TokenStorage`."""
        return self._tokens.get(resource)

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """See :class:`TokenStorage`."""
        if tokens is None:
            self._tokens.pop(resource, None)
        else:
            self._tokens[resource] = tokens

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """See :class:`TokenStorage`."""
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """See :class:`TokenStorage`."""
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client


class FileTokenStorage:
    """One JSON file, readable and writable by its owner only (0600), replaced
    atomically on each change so a crash never leaves half a file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = trio.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        data.setdefault("tokens", {})
        data.setdefault("clients", {})
        return data

    def _store(self, data: dict[str, Any]) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        # Created 0600 from the start: never a moment where others could read it.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to an existing file
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    async def _update(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        def run() -> None:
            data = self._load()
            if value is None:
                data[section].pop(key, None)
            else:
                data[section][key] = value
            self._store(data)

        async with self._lock:
            await trio.to_thread.run_sync(run)

    async def _get(self, section: str, key: str) -> Any:
        data = await trio.to_thread.run_sync(self._load)
        return data[section].get(key)

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """See :class:`TokenStorage`."""
        raw = await self._get("tokens", resource)
        return TokenSet(**raw) if isinstance(raw, dict) else None

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """See :class:`TokenStorage`."""
        await self._update("tokens", resource, tokens.to_json() if tokens else None)

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """See :class:`TokenStorage`."""
        raw = await self._get("clients", issuer)
        return ClientInfo.from_json(raw) if isinstance(raw, dict) else None

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """See :class:`TokenStorage`."""
        await self._update("clients", issuer, client.to_json() if client else None)
