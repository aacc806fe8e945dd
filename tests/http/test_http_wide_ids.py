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


async def test_ids_past_the_int_text_bound_and_ids_no_message_can_carry() -> None:
    """A 5,000-digit id (past Python's int-from-text bound) is answered digit for digit;
    ``1e400`` and a lone surrogate are valid JSON but no id: 400 with -32600, id null."""
    async with running_app() as (_, url):
        raw = RawClient(url)
        try:
            await raw.initialize()
            digits = "4" * 5000
            call = ('{"jsonrpc":"2.0","id":' + digits + ',"method":"tools/call","params":'
                    '{"name":"echo","arguments":{"text":"hi"}}}').encode()
            status, _, body = await raw.simple("POST", call)
            assert status == 200, body
            assert b'"id":' + digits.encode() + b',"result":' in body, body[:200]
            for rid in (b"1e400", b"-1e400", b'"\\ud800"'):
                status, _, body = await raw.simple(
                    "POST", b'{"jsonrpc":"2.0","id":' + rid + b',"method":"ping"}')
                assert status == 400, body
                assert b'"id":null' in body and b"-32600" in body, body
        finally:
            await raw.aclose()
