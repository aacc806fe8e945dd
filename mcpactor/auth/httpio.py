"""The few HTTP exchanges of the OAuth flow, on our HTTP client (:class:`HttpPool`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import orjson

from mcpactor.auth.errors import AuthorizationError
from mcpactor.transports.http_client import HttpClientError, HttpPool
from mcpactor.transports.security import redact_target

__all__ = ["JsonAnswer", "OAuthHttp"]

_MAX_BODY = 1024 * 1024


class JsonAnswer:
    """Status, headers and decoded JSON body (None when the body is not JSON)."""

    def __init__(self, status: int, headers: dict[str, str], data: Any) -> None:
        self.status = status
        self.headers = headers
        self.data = data

    @property
    def ok(self) -> bool:
        """2xx."""
        return 200 <= self.status < 300


class OAuthHttp:
    """GET JSON, POST a form, POST JSON; each read to its end so connections are reused."""

    def __init__(self, pool: HttpPool | None = None, *, protocol_version: str | None = None) -> None:
        self.pool = pool or HttpPool()
        self.protocol_version = protocol_version

    async def _exchange(self, method: str, url: str, headers: list[tuple[str, str]],
                        body: bytes | None = None) -> JsonAnswer:
        try:
            resp = await self.pool.request(method, url, headers, body)
            try:
                raw = await resp.read(_MAX_BODY)
            finally:
                await resp.aclose()
        except HttpClientError as exc:
            if isinstance(exc, AuthorizationError):
                raise
            raise AuthorizationError(f"{method} {redact_target(url)} failed: {exc}") from exc
        try:
            data = orjson.loads(raw) if raw.strip() else None
        except orjson.JSONDecodeError:
            data = None
        return JsonAnswer(resp.status, resp.headers, data)

    async def get_json(self, url: str) -> JsonAnswer:
        """GET a metadata document."""
        headers = [("accept", "application/json")]
        if self.protocol_version:
            # RFC 9728/8414 do not need it; the MCP spec asks clients to send it on
            # discovery requests so servers can tell revisions apart.
            headers.append(("mcp-protocol-version", self.protocol_version))
        return await self._exchange("GET", url, headers)

    async def post_form(self, url: str, form: dict[str, str],
                        headers: list[tuple[str, str]] | None = None) -> JsonAnswer:
        """POST ``application/x-www-form-urlencoded`` (token endpoints)."""
        body = urlencode(form).encode("ascii")
        h = [("content-type", "application/x-www-form-urlencoded"),
             ("accept", "application/json"), *(headers or [])]
        return await self._exchange("POST", url, h, body)

    async def post_json(self, url: str, data: Any) -> JsonAnswer:
        """POST JSON (dynamic client registration)."""
        h = [("content-type", "application/json"), ("accept", "application/json")]
        return await self._exchange("POST", url, h, orjson.dumps(data))

    async def get_raw(self, url: str) -> tuple[int, dict[str, str]]:
        """GET without following redirects: status and headers (headless authorization)."""
        try:
            resp = await self.pool.request("GET", url, [("accept", "text/html,*/*")])
            try:
                await resp.read(_MAX_BODY)
            finally:
                await resp.aclose()
        except HttpClientError as exc:
            raise AuthorizationError(f"GET {redact_target(url)} failed: {exc}") from exc
        return resp.status, resp.headers

    async def aclose(self) -> None:
        """Close the connections."""
        await self.pool.aclose()
