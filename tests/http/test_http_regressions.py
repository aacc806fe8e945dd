"""Focused regression tests for bugs the generated-input test (tests/fuzz) found over
Streamable HTTP."""

from __future__ import annotations

import trio
from http_support import RawClient, request_body, running_app


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


async def test_a_cancellation_naming_a_wide_id_ends_its_post() -> None:
    """orjson read the requestId of a cancellation, an integer past 64 bits, as a float:
    the call was not cancelled and its POST stayed open for ever."""
    rid = 2**64 + 1
    call = ('{"jsonrpc":"2.0","id":' + str(rid)
            + ',"method":"tools/call","params":{"name":"hang","arguments":{}}}').encode()
    cancel = ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":'
              + str(rid) + "}}").encode()
    async with running_app() as (_, url):
        raw = RawClient(url)
        try:
            await raw.initialize()
            with trio.fail_after(5):
                async with trio.open_nursery() as nursery:
                    ended = trio.Event()

                    async def hanging() -> None:
                        resp = await raw.post(call)
                        await resp.read()
                        ended.set()

                    nursery.start_soon(hanging)
                    await trio.sleep(0.3)
                    status, _, _ = await raw.simple("POST", cancel)
                    assert status == 202
                    await ended.wait()
        finally:
            await raw.aclose()


async def test_a_call_cancelled_before_its_answer_was_decided_is_not_a_500() -> None:
    """A POST whose only request the client cancelled within the JSON window had no
    answer to send and was told 500 "the session ended before answering"."""
    call = request_body(7, "tools/call", {"name": "hang", "arguments": {}})
    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}'
    async with running_app(json_window=2.0) as (_, url):
        raw = RawClient(url)
        try:
            await raw.initialize()
            with trio.fail_after(5):
                async with trio.open_nursery() as nursery:
                    got: list[tuple[int, bytes]] = []

                    async def hanging() -> None:
                        resp = await raw.post(call)
                        got.append((resp.status, await resp.read()))

                    nursery.start_soon(hanging)
                    await trio.sleep(0.2)
                    status, _, _ = await raw.simple("POST", cancel)
                    assert status == 202
            [(status, body)] = got
            assert status == 202 and body == b"", (status, body)
            # The session is fine.
            status, _, body = await raw.simple("POST", request_body(8, "ping"))
            assert status == 200 and b'"id":8' in body
        finally:
            await raw.aclose()
