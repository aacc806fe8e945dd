"""Resumption after a dropped connection, session expiry, DELETE, and re-initialization."""

from __future__ import annotations

import orjson
import trio
from http_support import (
    RawClient,
    make_server,
    messages,
    read_events,
    request_body,
    running_app,
    wait_until,
)

from mcpactor import connect_http
from mcpactor.transports.sse import SseParser

TIMEOUT = 15


def _only_reaper_left(app: object) -> bool:
    nursery = app._nursery  # type: ignore[attr-defined]
    return nursery is not None and len(nursery.child_tasks) == 1


async def test_resume_after_killing_the_connection_loses_and_duplicates_nothing() -> None:
    n = 8
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            call = request_body(5, "tools/call", {
                "name": "count", "arguments": {"n": n, "delay": 0.03},
                "_meta": {"progressToken": "tok"},
            })
            resp = await raw.post(call)
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            parser = SseParser()
            first: list[dict[str, object]] = []
            async for chunk in resp.iter_bytes():
                for ev in parser.feed(chunk):
                    if ev.data:
                        first.append(orjson.loads(ev.data))
                if len(first) >= 3:
                    break
            # Drop the TCP connection in the middle of the stream.
            await resp.aclose()
            last_id = parser.last_event_id
            assert last_id is not None
            await trio.sleep(0.1)  # progress goes on while nobody listens
            status_headers = raw.headers(accept="text/event-stream", last_event_id=last_id)
            resumed = await raw.pool.request("GET", url, status_headers)
            assert resumed.status == 200
            rest = messages(await read_events(resumed, until_id=5))
            await resumed.aclose()
            everything = first + rest
            progress = [m["params"]["progress"] for m in everything  # type: ignore[index]
                        if m.get("method") == "notifications/progress"]
            assert progress == list(range(1, n + 1))
            answers = [m for m in everything if m.get("id") == 5]
            assert len(answers) == 1
            assert answers[0]["result"]["content"][0]["text"] == f"counted to {n}"  # type: ignore[index]
            await raw.aclose()


async def test_resumption_replays_only_the_broken_stream() -> None:
    # Always-SSE mode: by default a quick echo is answered with JSON, not a stream.
    with trio.fail_after(TIMEOUT):
        async with running_app(json_response=False) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            a = await raw.post(request_body(1, "tools/call", {"name": "echo", "arguments": {"text": "A"}}))
            events_a = await read_events(a)
            await a.aclose()
            b = await raw.post(request_body(2, "tools/call", {"name": "echo", "arguments": {"text": "B"}}))
            await read_events(b)
            await b.aclose()
            primer = events_a[0]
            assert primer.data == "" and primer.id is not None and primer.retry is not None
            again = await raw.pool.request(
                "GET", url, raw.headers(accept="text/event-stream", last_event_id=primer.id)
            )
            got = messages(await read_events(again))
            await again.aclose()
            assert [m["id"] for m in got] == [1]
            await raw.aclose()


async def test_idle_sessions_expire_and_are_cleaned_up() -> None:
    with trio.fail_after(TIMEOUT):
        server = make_server()
        async with running_app(server, session_idle_timeout=0.3) as (app, url):
            raw = RawClient(url)
            await raw.initialize()
            assert len(app.sessions) == 1 and len(server.sessions) == 1
            session = next(iter(app.sessions.values())).session
            with trio.fail_after(3):
                await session.closed.wait()
            assert not app.sessions and not server.sessions
            # The session's task ends a step after its actor tree has closed it.
            await wait_until(lambda: _only_reaper_left(app))
            status, _, _ = await raw.simple("POST", request_body(3, "ping"))
            assert status == 404
            await raw.aclose()


async def test_open_get_stream_keeps_a_session_alive() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(session_idle_timeout=0.2) as (app, url), connect_http(url, mode="legacy") as client:
            await trio.sleep(0.6)
            assert len(app.sessions) == 1
            assert (await client.call_tool("echo", {"text": "x"})).content[0].text == "x"


async def test_delete_frees_everything() -> None:
    with trio.fail_after(TIMEOUT):
        server = make_server()
        async with running_app(server) as (app, url):
            async with connect_http(url, mode="legacy") as client:
                await client.call_tool("echo", {"text": "x"})
                sid = next(iter(app.sessions))
                assert len(server.sessions) == 1
            # Leaving the block sent DELETE.
            await wait_until(
                lambda: not app.sessions and not server.sessions and _only_reaper_left(app)
            )
            raw = RawClient(url)
            raw.session_id = sid
            status, _, _ = await raw.simple("DELETE")
            assert status == 404
            await raw.aclose()


async def test_delete_disabled_is_405() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(enable_delete=False, enable_get=False) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            assert (await raw.simple("DELETE"))[0] == 405
            assert (await raw.simple("GET", headers=raw.headers(accept="text/event-stream")))[0] == 405
            await raw.aclose()
            async with connect_http(url, mode="legacy") as client:  # the client tolerates the 405 on GET
                assert (await client.call_tool("echo", {"text": "y"})).content[0].text == "y"


async def test_client_starts_a_new_session_after_404() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url), connect_http(url, mode="legacy") as client:
            await client.call_tool("echo", {"text": "1"})
            (old_id, hs), = app.sessions.items()
            assert hs.session is not None
            hs.session.close("forced expiry")
            app.sessions.pop(old_id, None)
            result = await client.call_tool("echo", {"text": "2"})
            assert result.content[0].text == "2"
            assert len(app.sessions) == 1 and old_id not in app.sessions
