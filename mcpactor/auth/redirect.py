"""How the authorization response comes back to the client (the redirect URI).

* :class:`LoopbackRedirectHandler` (the default, RFC 8252 §7.3): listens on
  ``http://127.0.0.1:<port>/callback``, shows the user the authorization URL (opens a
  browser), and takes the one request the browser is redirected to.
* :class:`HeadlessRedirectHandler`: requests the authorization URL itself and reads
  the ``Location`` of the redirect; for authorization servers that approve without a
  user (test servers, the conformance suite's).
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import attrs
import h11
import trio

from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.httpio import OAuthHttp

__all__ = [
    "AuthorizationResponse",
    "HeadlessRedirectHandler",
    "LoopbackRedirectHandler",
    "RedirectHandler",
    "parse_authorization_response",
]


@attrs.frozen
class AuthorizationResponse:
    """What came back on the redirect URI."""

    code: str = attrs.field(repr=False)
    state: str | None
    #: RFC 9207 issuer identification, when the server sends it.
    iss: str | None = None


def parse_authorization_response(url: str) -> AuthorizationResponse:
    """The code (or the error) in a redirect URL's query."""
    query = parse_qs(urlsplit(url).query)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    error = one("error")
    if error:
        desc = one("error_description")
        raise AuthorizationError(f"authorization refused: {error}" + (f" ({desc})" if desc else ""))
    code = one("code")
    if not code:
        raise AuthorizationError("the authorization response has no code")
    return AuthorizationResponse(code, one("state"), one("iss"))


class RedirectHandler(Protocol):
    """Gets the user through the authorization endpoint and back."""

    async def redirect_uri(self) -> str:
        """The redirect URI to register and send (stable for the handler's life)."""
        ...

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        """Send the user to ``authorization_url``; return what reached the redirect URI."""
        ...


class HeadlessRedirectHandler:
    """Follows the authorization URL itself: for servers that approve with no user."""

    def __init__(self, redirect_uri: str = "http://localhost:3000/callback",
                 http: OAuthHttp | None = None) -> None:
        self._redirect_uri = redirect_uri
        self._http = http

    async def redirect_uri(self) -> str:
        """See :class:`RedirectHandler`."""
        return self._redirect_uri

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        """GET the URL and read the redirect's ``Location`` (never followed)."""
        http = self._http or OAuthHttp()
        try:
            status, headers = await http.get_raw(authorization_url)
        finally:
            if self._http is None:
                await http.aclose()
        location = headers.get("location")
        if not (300 <= status < 400) or not location:
            raise AuthorizationError(f"the authorization endpoint answered {status}, not a redirect")
        if not location.startswith(self._redirect_uri):
            raise AuthorizationError("the authorization endpoint redirected elsewhere")
        return parse_authorization_response(location)


_PAGE = b"<!doctype html><title>Authorized</title><p>You can close this window.</p>"


class LoopbackRedirectHandler:
    """Listens on the loopback interface for the browser's redirect (RFC 8252 §7.3)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, path: str = "/callback",
                 open_url: Callable[[str], object] | None = None, timeout: float = 300.0) -> None:
        self.host = host
        self.port = port
        self.path = path
        self.open_url = open_url or webbrowser.open
        self.timeout = timeout
        self._listener: trio.SocketListener | None = None

    async def _listen(self) -> trio.SocketListener:
        if self._listener is None:
            sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
            await sock.bind((self.host, self.port))
            sock.listen(4)
            self.port = sock.getsockname()[1]
            self._listener = trio.SocketListener(sock)
        return self._listener

    async def redirect_uri(self) -> str:
        """See :class:`RedirectHandler`; binds the port on first use."""
        await self._listen()
        return f"http://{self.host}:{self.port}{self.path}"

    async def authorize(self, authorization_url: str) -> AuthorizationResponse:
        """Open the URL for the user, then serve the callback request."""
        listener = await self._listen()
        target: str | None = None

        async def show() -> None:
            # In a thread (webbrowser blocks), next to the accept loop: a user agent
            # that waits for our answer must not wait on us waiting for it.
            await trio.to_thread.run_sync(self.open_url, authorization_url, abandon_on_cancel=True)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(show)
            with trio.fail_after(self.timeout):
                while target is None:
                    stream = await listener.accept()
                    try:
                        target = await self._one_request(stream)
                    finally:
                        await stream.aclose()
        return parse_authorization_response(target)

    async def _one_request(self, stream: trio.abc.Stream) -> str | None:
        conn = h11.Connection(h11.SERVER)
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await stream.receive_some(16384)
                if not data:
                    return None
                conn.receive_data(bytes(data))
                continue
            if isinstance(ev, h11.Request):
                break
            return None
        target = ev.target.decode("latin-1")
        ours = urlsplit(target).path == self.path and ev.method == b"GET"
        status = 200 if ours else 404
        body = _PAGE if ours else b"not found"
        await stream.send_all(conn.send(h11.Response(status_code=status, headers=[
            ("content-type", "text/html; charset=utf-8"), ("content-length", str(len(body))),
            ("connection", "close")])) or b"")
        await stream.send_all(conn.send(h11.Data(data=body)) or b"")
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
        return target if ours else None

    async def aclose(self) -> None:
        """Stop listening."""
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None
