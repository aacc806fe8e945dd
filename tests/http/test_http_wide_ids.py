"""Request ids wider than 64 bits over Streamable HTTP: answered with the id as sent."""

from __future__ import annotations

import pytest
from http_support import RawClient, running_app

WIDE = 2**64 + 1


def _req(rid: int, method: str, params: str | None = None) -> bytes:
    tail = "" if params is None else ',"params":' + params
    return ('{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"' + method + '"' + tail
            + "}").encode()


@pytest.mark.parametrize("json_response", [None, False])
async def test_wide_ids_are_answered_as_sent(json_response: bool | None) -> None:
    async with running_app(json_response=json_response) as (_, url):
        raw = RawClient(url)
        try:
            await raw.initialize("2025-03-26")  # the revision with batches
            for rid, method, params in [
                (WIDE, "ping", None),
                (-(2**70), "tools/call", '{"name":"echo","arguments":{"text":"hi"}}'),
                (int("7" * 60), "tools/list", None),
                (WIDE + 1, "no/such/method", None),
            ]:
                status, _, body = await raw.simple("POST", _req(rid, method, params))
                assert status == 200, body
                assert b'"id":' + str(rid).encode() + b"," in body, body
            batch = b"[" + _req(WIDE + 2, "ping") + b"," + _req(3, "ping") + b"]"
            status, _, body = await raw.simple("POST", batch)
            assert status == 200, body
            assert b'"id":' + str(WIDE + 2).encode() + b"," in body and b'"id":3,' in body
            # A message that is not valid JSON-RPC but has a readable id: the 400's
            # error carries it.
            bad = ('{"jsonrpc":"1.0","id":' + str(WIDE) + ',"method":"ping"}').encode()
            status, _, body = await raw.simple("POST", bad)
            assert status == 400 and b'"id":' + str(WIDE).encode() + b"," in body, body
        finally:
            await raw.aclose()
