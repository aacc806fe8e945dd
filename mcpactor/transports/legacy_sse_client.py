"""Client side of the legacy HTTP+SSE transport (protocol 2024-11-05).

GET the SSE URL; the first ``endpoint`` event names the URL to POST messages to (same
origin required); every server message arrives as a ``message`` event on the GET
stream. Used directly (``connect_sse``) or as the Streamable HTTP client's fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from urllib.parse import urljoin

import trio

from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from mcpactor.transports.http_client import HttpClientError, HttpPool, HttpResponse, split_url
from mcpactor.transports.sse import SseParser

__all__ = ["LegacySseClientTransport"]


class LegacySseClientTransport(Transport):
    """One legacy session: call :meth:`connect` first."""

    name = "sse"

    def __init__(
        self,
        url: str,
        nursery: trio.Nursery,
        *,
        headers: dict[str, str] | None = None,
        pool: HttpPool | None = None,
        deliver: Callable[[bytes], None] | None = None,
        endpoint_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.nursery = nursery
        self.extra_headers = dict(headers or {})
        self.pool = pool or HttpPool()
        self.endpoint: str | None = None
        self.endpoint_timeout = endpoint_timeout
        self._in_send, self._in_recv = trio.open_memory_channel[bytes](math.inf)
        self._deliver = deliver or self._queue
        self._resp: HttpResponse | None = None
        self._closed = False
        self._reader_done = trio.Event()

    def _queue(self, data: bytes) -> None:
        try:
            self._in_send.send_nowait(data)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def connect(self) -> None:
        """Open the SSE stream and wait for the ``endpoint`` event."""
        headers = [("accept", "text/event-stream"), *self.extra_headers.items()]
        resp = await self.pool.request("GET", self.url, headers)
        if resp.status != 200 or resp.content_type != "text/event-stream":
            await resp.aclose()
            raise TransportClosed(f"legacy SSE GET answered HTTP {resp.status}")
        self._resp = resp
        got_endpoint = trio.Event()
        self.nursery.start_soon(self._reader, resp, got_endpoint)
        with trio.move_on_after(self.endpoint_timeout):
            await got_endpoint.wait()
        if self.endpoint is None:
            await resp.aclose()
            raise TransportClosed("no endpoint event on the legacy SSE stream")

    async def _reader(self, resp: HttpResponse, got_endpoint: trio.Event) -> None:
        parser = SseParser()
        try:
            async for chunk in resp.iter_bytes():
                for ev in parser.feed(chunk):
                    if ev.event == "endpoint" and self.endpoint is None:
                        endpoint = urljoin(self.url, ev.data.strip())
                        if split_url(endpoint)[0] != split_url(self.url)[0]:
                            # A foreign endpoint would leak our messages elsewhere.
                            break
                        self.endpoint = endpoint
                        got_endpoint.set()
                    elif ev.event == "message" and ev.data.strip():
                        self._deliver(ev.data.encode("utf-8"))
        except (HttpClientError, ValueError):  # ValueError: an oversized SSE line
            pass
        finally:
            got_endpoint.set()
            self._reader_done.set()
            self._in_send.close()

    async def post(self, data: bytes) -> None:
        """Send one message to the endpoint."""
        if self.endpoint is None or self._closed:
            raise TransportClosed("the legacy SSE session is not connected")
        headers = [("content-type", "application/json"), *self.extra_headers.items()]
        try:
            resp = await self.pool.request("POST", self.endpoint, headers, data)
            await resp.read()
            await resp.aclose()
        except HttpClientError as exc:
            raise TransportClosed(f"POST to the legacy endpoint failed: {exc}") from exc
        if resp.status >= 400:
            raise TransportClosed(f"the legacy endpoint answered HTTP {resp.status}")

    # -- Transport --------------------------------------------------------------------

    async def receive(self) -> bytes | Oversize:
        """The next message from the SSE stream."""
        try:
            return await self._in_recv.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise trio.EndOfChannel from None

    async def send(self, messages: list[Outgoing]) -> None:
        """POST each message in order."""
        for data, _ in messages:
            await self.post(data)

    async def aclose(self) -> None:
        """Close the SSE stream (which ends the session on the server)."""
        if self._closed:
            return
        self._closed = True
        resp, self._resp = self._resp, None
        if resp is not None:
            await resp.aclose()
        self._in_send.close()
