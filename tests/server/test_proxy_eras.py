"""A proxy in every combination of eras: its client speaking a handshake revision or
2026-07-28, and the proxy speaking either to the server behind it; all three real
processes, over stdio and over HTTP. What the server behind asks back (elicitation,
sampling, roots; in 2026-07-28 input rounds, several at once, over several rounds)
reaches the client that caused it, as a request in a handshake session and as the
proxy's own input round in a 2026-07-28 request."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import ClientHandlers, RequestError, connect_http, connect_stdio
from mcpactor.protocol import types as t

HERE = Path(__file__).resolve().parent
UPSTREAM_TARGET = f"{HERE / 'upstream_server.py'}:server"
UPSTREAM = [sys.executable, "-m", "mcpactor", "run", UPSTREAM_TARGET]
ERAS = {"legacy": "2025-11-25", "2026": "2026-07-28"}
MODES = {"legacy": "legacy", "2026": "auto"}  # auto: discovers 2026-07-28 from mcpactor


def _handlers(asked: list[str]) -> ClientHandlers:
    async def elicitation(params: Any) -> t.ElicitResult:
        asked.append("elicitation")
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def sampling(params: Any) -> t.CreateMessageResult:
        asked.append("sampling")
        return t.CreateMessageResult(role="assistant", model="test",
                                     content=t.TextContent(text="Hello Ada!"))

    async def roots() -> list[t.Root]:
        asked.append("roots")
        return [t.Root(uri="file:///home/ada")]

    return ClientHandlers(elicitation=elicitation, sampling=sampling, roots=roots)


async def _exercise(client: Any, down: str, up: str, asked: list[str]) -> None:
    assert client.server_info["name"] == "front"
    assert client.protocol_version == ERAS[down]
    assert (await client.call_tool("era", {})).content[0].text == ERAS[up]
    assert (await client.call_tool("add", {"a": 20, "b": 22})).data == {"result": 42}

    progress: list[float] = []
    logs: list[Any] = []
    client.session.handler.h.on_log = lambda p: logs.append(p.data)
    await client.set_logging_level("info")  # in 2026-07-28: each request's _meta
    counted = await client.call_tool(
        "count", {"n": 3}, on_progress=lambda p, total, msg: progress.append(p))
    assert counted.content[0].text == "counted to 3"
    assert progress == [1.0, 2.0, 3.0]
    await client.session.settle()  # the log callbacks of what came before the answer
    assert logs == ["step 1", "step 2", "step 3"]

    asked.clear()
    asked_result = await client.call_tool("ask", {})
    assert asked_result.content[0].text == "accept: Ada; model: Hello Ada!"
    assert asked == ["elicitation", "sampling"]  # each asked of the client once

    asked.clear()
    surveyed = await client.call_tool("survey", {})
    assert surveyed.content[0].text == "Ada; Hello Ada!; 1 root(s)"
    assert sorted(asked) == ["elicitation", "roots", "sampling"]
    assert (await client.call_tool("where", {})).data == {"result": ["file:///home/ada"]}

    with pytest.raises(RequestError) as refused:
        await client.call_tool("refuse", {})
    assert (refused.value.code, refused.value.data) == (-32050, {"retry": False})
    with pytest.raises(RequestError) as unknown:
        await client.call_tool("missing", {})
    assert unknown.value.code == -32602

    with pytest.raises(RequestError) as missing:  # coded for the client's revision
        await client.read_resource("file:///missing")
    assert (missing.value.code, missing.value.data) == (
        -32602 if down == "2026" else -32002, {"uri": "file:///missing"})
    readme = await client.read_resource("file:///readme")
    assert readme.contents[0].text == "read me"
    page = await client.read_resource("file:///docs/intro")
    assert page.contents[0].text == "page intro"
    prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert prompt.messages[0].content.text == "Please review: x = 1"
    done = await client.complete(t.PromptReference(name="review"),
                                 {"name": "code", "value": "py"})
    assert done.completion.values == ["python"]
    tools = {tool.name for tool in await client.list_all_tools()}
    assert {"add", "ask", "survey", "where", "era"} <= tools

    # Resource updates from the server behind (a subscription, or a listen upstream).
    updated = trio.Event()
    heard: list[Any] = []

    def on_updated(params: Any) -> None:
        heard.append(params)
        updated.set()

    client.session.handler.h.on_resource_updated = on_updated
    if down == "legacy":
        await client.subscribe("file:///readme")
        await client.call_tool("touch", {"uri": "file:///other"})
        await client.call_tool("touch", {"uri": "file:///readme"})
        with trio.fail_after(10):
            await updated.wait()
        assert [(p.uri, p.meta) for p in heard] == [("file:///readme", None)]
        await client.unsubscribe("file:///readme")


def _front(tmp_path: Path, target: str | list[str], up: str) -> str:
    front = tmp_path / "front.py"
    front.write_text(
        "from mcpactor import Server\n"
        f"server = Server.as_proxy({target!r}, name='front', mode={MODES[up]!r})\n")
    return f"{front}:server"


@pytest.mark.parametrize("up", ["legacy", "2026"])
@pytest.mark.parametrize("down", ["legacy", "2026"])
async def test_over_stdio_to_a_stdio_server(tmp_path: Path, down: str, up: str) -> None:
    """client → `mcpactor run front.py` (stdio) → `mcpactor run upstream_server.py`."""
    command = [sys.executable, "-m", "mcpactor", "run", _front(tmp_path, UPSTREAM, up)]
    asked: list[str] = []
    with trio.fail_after(60):
        async with connect_stdio(command, handlers=_handlers(asked),
                                 mode=MODES[down]) as client:
            await _exercise(client, down, up, asked)


@pytest.mark.parametrize("up", ["legacy", "2026"])
@pytest.mark.parametrize("down", ["legacy", "2026"])
async def test_over_http_to_an_http_server(
        tmp_path: Path, down: str, up: str,
        http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> None:
    """client → `mcpactor run front.py --transport http` → the same over HTTP: in
    2026-07-28 every request of the client is a POST of its own, none shares a session."""
    _, upstream_url = http_server(UPSTREAM_TARGET)
    _, front_url = http_server(_front(tmp_path, upstream_url, up))
    asked: list[str] = []
    with trio.fail_after(60):
        async with connect_http(front_url, handlers=_handlers(asked),
                                mode=MODES[down]) as client:
            await _exercise(client, down, up, asked)


# -- how 2026-07-28 requests share the upstream (a server of this process behind) --------


def _upstream() -> Any:
    from mcpactor.entrypoint import load_entry_point

    return load_entry_point(UPSTREAM_TARGET)


async def _concurrently(client: Any, calls: int) -> list[str]:
    out: list[str] = []

    async def one() -> None:
        out.append((await client.call_tool("ask", {})).content[0].text)

    async with trio.open_nursery() as nursery:
        for _ in range(calls):
            nursery.start_soon(one)
    return out


@pytest.mark.parametrize("up", ["legacy", "2026"])
async def test_concurrent_2026_requests_each_get_their_own_questions(up: str) -> None:
    """Against a handshake upstream each 2026-07-28 request runs on an upstream session
    of its own while it lasts (its questions are its alone); against a 2026-07-28
    upstream they share one connection."""
    from mcpactor import Server
    from mcpactor.testing import open_client

    proxy = Server.as_proxy(_upstream(), name="front", mode=MODES[up])
    remote = proxy.mounts[0]
    asked: list[str] = []
    gate = trio.Event()

    async def slow_elicitation(params: Any) -> t.ElicitResult:
        asked.append("elicitation")
        if asked.count("elicitation") == 3:
            gate.set()
        await gate.wait()  # every request is asking at once
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    handlers = _handlers(asked)
    handlers.elicitation = slow_elicitation
    with trio.fail_after(20):
        async with open_client(proxy, handlers=handlers, mode="2026-07-28") as client:
            async with trio.open_nursery() as nursery:
                results: list[list[str]] = []
                nursery.start_soon(lambda: _collect(results, client))
            assert results == [["accept: Ada; model: Hello Ada!"] * 3]
            if up == "2026":
                assert remote._shared is not None and not remote._idle.get(remote._shared.caps)
            else:
                assert remote._shared is None
                assert sum(len(v) for v in remote._idle.values()) >= 3  # kept for the next


async def _collect(results: list[list[str]], client: Any) -> None:
    results.append(await _concurrently(client, 3))


@pytest.mark.parametrize("up", ["legacy", "2026"])
async def test_a_cancelled_2026_request_is_cancelled_upstream(up: str) -> None:
    from mcpactor import RequestTimeout, Server
    from mcpactor.testing import open_client

    upstream = _upstream()
    module = sys.modules[upstream.tools["sleepy"].fn.__module__]
    module.on_cancel = cancelled = trio.Event()
    proxy = Server.as_proxy(upstream, mode=MODES[up])
    async with open_client(proxy, mode="2026-07-28") as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("sleepy", {"seconds": 30}, timeout=0.2)
        with trio.fail_after(5):
            await cancelled.wait()
        assert (await client.call_tool("add", {"a": 1, "b": 1})).data == {"result": 2}


async def test_a_2026_client_without_the_capability_hears_it_from_the_server_behind() -> None:
    """The capabilities of each 2026-07-28 request reach the server behind in its _meta:
    it refuses to ask a client that cannot answer, with the revision's -32021."""
    from mcpactor import Server
    from mcpactor.testing import open_client

    proxy = Server.as_proxy(_upstream(), mode="auto")
    async with open_client(proxy, mode="2026-07-28") as client:
        with pytest.raises(RequestError) as info:
            await client.call_tool("ask", {})
        assert info.value.code == -32021
        assert info.value.data["requiredCapabilities"] == {"elicitation": {}}


@pytest.mark.parametrize("up", ["legacy", "2026"])
async def test_2026_requests_connect_again_after_the_server_behind_dies(up: str) -> None:
    from mcpactor import Server
    from mcpactor.testing import open_client

    proxy = Server.as_proxy(UPSTREAM, mode=MODES[up])
    with trio.fail_after(30):
        async with open_client(proxy, mode="2026-07-28") as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}
            with pytest.raises(RequestError) as gone:
                await client.call_tool("crash", {})
            assert gone.value.code == -32603 and "went away" in gone.value.message
            # A new upstream process answers the next request.
            assert (await client.call_tool("add", {"a": 2, "b": 2})).data == {"result": 4}


async def test_an_unreachable_server_behind_is_an_error_for_each_2026_request(
        tmp_path: Path) -> None:
    from mcpactor import Server
    from mcpactor.testing import open_client

    missing = tmp_path / "nope.py"
    proxy = Server.as_proxy([sys.executable, str(missing)])
    async with open_client(proxy, mode="2026-07-28") as client:
        for _ in range(2):
            with pytest.raises(RequestError) as info:
                await client.call_tool("add", {"a": 1, "b": 2})
            assert info.value.code == -32603
            assert "cannot reach the proxied server" in info.value.message


async def test_a_handshake_server_s_list_changes_reach_the_proxy_s_2026_listeners() -> None:
    from mcpactor import Server
    from mcpactor.testing import open_client

    upstream = Server("changing")

    @upstream.tool
    async def first() -> str:
        return "1"

    proxy = Server.as_proxy(upstream, mode="legacy")
    heard: list[str] = []
    acknowledged, changed = trio.Event(), trio.Event()

    def notified(event: Any) -> None:
        heard.append(event.method)
        if event.method == "notifications/subscriptions/acknowledged":
            acknowledged.set()
        elif event.method == "notifications/tools/list_changed":
            changed.set()

    with trio.fail_after(10):
        async with open_client(proxy, mode="2026-07-28",
                               handlers=ClientHandlers(on_notification=notified)) as client:
            assert [x.name for x in await client.list_all_tools()] == ["first"]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: client.request(
                    "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
                await acknowledged.wait()

                @upstream.tool
                async def second() -> str:
                    return "2"

                await upstream.notify_tools_list_changed()
                await changed.wait()
                nursery.cancel_scope.cancel()
            assert [x.name for x in await client.list_all_tools()] == ["first", "second"]
    assert heard.count("notifications/tools/list_changed") == 1
