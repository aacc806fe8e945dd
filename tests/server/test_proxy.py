"""``Server.as_proxy(target)`` / ``RemoteServer``: a remote server (a real stdio
process, a real HTTP server on 127.0.0.1) served as a local one, through mcpactor's
own client; what the remote server asks back reaches the client that caused it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import mcpactor
from mcpactor import ClientHandlers, RemoteServer, RequestError, RequestTimeout, Server
from mcpactor.protocol import types as t
from mcpactor.testing import open_client

HERE = Path(__file__).resolve().parent
UPSTREAM = [sys.executable, "-m", "mcpactor", "run", f"{HERE / 'upstream_server.py'}:server"]


def _upstream() -> Server:
    from mcpactor.entrypoint import load_entry_point

    server = load_entry_point(f"{HERE / 'upstream_server.py'}:server")
    assert isinstance(server, Server)
    return server


async def _handlers_answering() -> ClientHandlers:
    async def elicitation(params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def sampling(params: Any) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", model="test",
                                     content=t.TextContent(text="Hello Ada!"))

    return ClientHandlers(elicitation=elicitation, sampling=sampling)


async def test_a_stdio_server_behind_a_proxy() -> None:
    proxy = Server.as_proxy(UPSTREAM, name="front")
    progress: list[float] = []
    logs: list[Any] = []
    handlers = await _handlers_answering()
    handlers.on_log = lambda p: logs.append(p.data)
    async with open_client(proxy, handlers=handlers) as client:
        assert client.server_info["name"] == "front"
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        assert {"add", "count", "ask", "refuse"} <= set(tools)
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert (await client.call_tool("add", {"a": 2, "b": 3})).data == {"result": 5}
        counted = await client.call_tool(
            "count", {"n": 3}, on_progress=lambda p, total, msg: progress.append(p))
        assert counted.content[0].text == "counted to 3"  # type: ignore[union-attr]
        asked = await client.call_tool("ask", {})
        assert asked.content[0].text == "accept: Ada; model: Hello Ada!"  # type: ignore[union-attr]
        with pytest.raises(RequestError) as info:
            await client.call_tool("refuse", {})
        assert (info.value.code, info.value.data) == (-32050, {"retry": False})
        with pytest.raises(RequestError) as unknown:
            await client.call_tool("missing", {})
        assert unknown.value.code == -32602
        readme = await client.read_resource("file:///readme")
        assert readme.contents[0].text == "read me"  # type: ignore[union-attr]
        page = await client.read_resource("file:///docs/intro")
        assert page.contents[0].text == "page intro"  # type: ignore[union-attr]
        templates = await client.list_all_resource_templates()
        assert [x.uri_template for x in templates] == ["file:///docs/{page}"]
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        assert prompt.messages[0].content.text == "Please review: x = 1"  # type: ignore[union-attr]
        done = await client.complete(t.PromptReference(name="review"),
                                     {"name": "code", "value": "py"})
        assert done.completion.values == ["python"]
        await client.ping()
    assert progress == [1.0, 2.0, 3.0]
    assert logs == ["step 1", "step 2", "step 3"]


async def test_each_client_session_has_its_own_upstream_session() -> None:
    proxy = Server.as_proxy(UPSTREAM)
    async with open_client(proxy) as a, open_client(proxy) as b:
        first = await a.call_tool("session_id", {})
        again = await a.call_tool("session_id", {})
        other = await b.call_tool("session_id", {})
    assert first.content == again.content
    assert first.content != other.content


async def test_a_cancelled_call_is_cancelled_upstream() -> None:
    upstream = _upstream()
    module = sys.modules[upstream.tools["sleepy"].fn.__module__]
    module.on_cancel = cancelled = trio.Event()
    proxy = Server.as_proxy(upstream)  # a Server of this process: no subprocess
    async with open_client(proxy) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("sleepy", {"seconds": 30}, timeout=0.2)
        with trio.fail_after(5):
            await cancelled.wait()  # the upstream handler was cancelled
        assert (await client.call_tool("add", {"a": 1, "b": 1})).data == {"result": 2}


async def test_an_http_server_behind_a_proxy_beside_local_tools() -> None:
    upstream = _upstream()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: upstream.serve_http(
            port=0, quiet=True, task_status=task_status))
        front = Server("front")

        @front.tool
        async def local() -> str:
            return "mine"

        front.mount(RemoteServer(url), prefix="up")
        async with open_client(front) as client:
            names = sorted(x.name for x in await client.list_all_tools())
            assert "local" in names and "up_add" in names
            assert (await client.call_tool("up_add", {"a": 4, "b": 5})).data == {"result": 9}
            assert [r.uri for r in await client.list_all_resources()] == ["file:///up/readme"]
            read = await client.read_resource("file:///up/readme")
            assert (read.contents[0].uri, read.contents[0].text) == (  # type: ignore[union-attr]
                "file:///up/readme", "read me")
            assert (await client.call_tool("local", {})).content[0].text == "mine"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def test_an_unreachable_upstream_is_a_clear_error_and_is_tried_again(
        tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    proxy = mcpactor.proxy([sys.executable, str(missing)])
    async with open_client(proxy) as client:
        for _ in range(2):
            with pytest.raises(RequestError) as info:
                await client.list_tools()
            assert info.value.code == -32603
            assert "cannot reach the proxied server" in info.value.message
            assert str(missing) in info.value.message


async def test_a_proxy_process_in_front_of_a_server_process(tmp_path: Path) -> None:
    """client → `mcpactor run proxy.py` → `mcpactor run upstream_server.py`, all real."""
    front = tmp_path / "front.py"
    front.write_text(
        "from mcpactor import Server\n"
        f"server = Server.as_proxy({UPSTREAM!r}, name='front')\n")
    command = [sys.executable, "-m", "mcpactor", "run", f"{front}:server"]
    handlers = await _handlers_answering()
    async with mcpactor.connect_stdio(command, handlers=handlers) as client:
        assert client.server_info["name"] == "front"
        assert (await client.call_tool("add", {"a": 20, "b": 22})).data == {"result": 42}
        asked = await client.call_tool("ask", {})
        assert asked.content[0].text == "accept: Ada; model: Hello Ada!"  # type: ignore[union-attr]


async def test_a_remote_server_is_mounted_once_and_before_serving() -> None:
    remote = RemoteServer(UPSTREAM)
    first, second = Server("a"), Server("b")
    first.mount(remote)
    with pytest.raises(ValueError, match="mounted already"):
        second.mount(remote)
    async with second.running():
        with pytest.raises(RuntimeError, match="before serving"):
            second.mount(RemoteServer(UPSTREAM))


def test_bad_targets() -> None:
    with pytest.raises(ValueError, match="empty"):
        Server.as_proxy("")
    with pytest.raises(ValueError, match="empty"):
        Server.as_proxy([])
    with pytest.raises(TypeError, match="own client handlers"):
        RemoteServer("python x.py", handlers=ClientHandlers())


async def test_what_the_remote_server_lacks_is_answered_as_it_would_be() -> None:
    """The proxy declares every feature up front (the remote's are known only once
    connected); a feature the remote server lacks lists nothing and is answered as a
    server without it answers."""
    bare = Server("bare")

    @bare.tool
    async def only() -> str:
        return "the one tool"

    async with open_client(Server.as_proxy(bare)) as client:
        assert await client.list_all_prompts() == []
        assert await client.list_all_resources() == []
        with pytest.raises(RequestError) as info:
            await client.complete(t.PromptReference(name="x"), {"name": "n", "value": "v"})
        assert info.value.code == -32601 and "does not support it" in info.value.message
        with pytest.raises(RequestError) as missing:
            await client.read_resource("file:///x")
        assert (missing.value.code, missing.value.data) == (-32002, {"uri": "file:///x"})
