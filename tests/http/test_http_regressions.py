"""Focused regression tests for bugs the generated-input test (tests/fuzz) found over
Streamable HTTP."""

from __future__ import annotations

import trio

from tests.http.http_support import RawClient, request_body, running_app


async def test_a_batch_answered_by_the_connection_alone_reaches_its_post() -> None:
    """A batch of pings has no request for a handler: its answer was tied to no request
    and went to the standalone stream, so the POST waited for ever."""
    async with running_app() as (_, url):
        raw = RawClient(url)
        try:
            await raw.initialize("2025-03-26")
            batch = b"[" + request_body(1, "ping") + b"," + request_body(2, "ping") + b"]"
            with trio.fail_after(5):
                status, _, body = await raw.simple("POST", batch)
            assert status == 200
            assert body == b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]'
        finally:
            await raw.aclose()
