"""``Client.listen`` (2026-07-28 ``subscriptions/listen``) against our everything server,
a real subprocess over stdio and over HTTP: the acknowledgement (the filter the server
agreed to), the filter honoured, two subscriptions at once told apart, the callbacks
still told, the subscription ended by leaving the block (the server stops sending), and
a handshake session refused with a clear error."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
from process_support import http_process

from mcpactor import ClientHandlers, Server
from mcpactor.client.client import connect_stdio, connect_transport
from mcpactor.client.remote import connect_http
from mcpactor.session.limits import Limits
from mcpactor.transports.http_serve import serve_http
from mcpactor.transports.memory import memory_pair

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "everything_server.py")
WATCHED = "test://watched-resource"


def _http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    yield from http_process([sys.executable, EXAMPLE], cwd=ROOT)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    for url, _ in _http_server():
        yield url


@pytest.fixture
def own_http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A server process of the test's own (the test may end it)."""
    yield from _http_server()


def _connect(transport: str, url: str, **kw: Any) -> Any:
    if transport == "http":
        return connect_http(url, timeout=10, **kw)
    return connect_stdio([sys.executable, EXAMPLE], timeout=10, **kw)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_listen_delivers_what_the_filter_asks_for(transport: str, http_url: str) -> None:
    changed: list[Any] = []
    everything: list[str] = []

    async def on_tools_changed(params: Any) -> None:
        changed.append(params)

    async def on_notification(event: Any) -> None:
        everything.append(event.method)

    handlers = ClientHandlers(on_tools_changed=on_tools_changed,
                              on_notification=on_notification)
    with trio.fail_after(30):
        async with _connect(transport, http_url, handlers=handlers) as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools=True) as tools_sub, \
                    client.listen(prompts=True, resource_uris=[WATCHED]) as other_sub:
                assert tools_sub.acknowledged == {"toolsListChanged": True}
                assert other_sub.acknowledged == {
                    "promptsListChanged": True, "resourceSubscriptions": [WATCHED]}
                assert tools_sub.id != other_sub.id
                await client.call_tool("test_trigger_tool_change", {})
                await client.call_tool("test_update_watched_resource", {})
                await client.call_tool("test_trigger_prompt_change", {})
                note = await tools_sub.next(timeout=5)
                assert note.method == "notifications/tools/list_changed"
                assert note.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == \
                    tools_sub.id
                first = await other_sub.next(timeout=5)
                second = await other_sub.next(timeout=5)
                assert (first.method, first.uri) == ("notifications/resources/updated", WATCHED)
                assert second.method == "notifications/prompts/list_changed"
                # Nothing else arrived on either: each got only what its filter took.
                with pytest.raises(trio.TooSlowError):
                    await tools_sub.next(timeout=0.3)
                with pytest.raises(trio.TooSlowError):
                    await other_sub.next(timeout=0.1)
                # Put the tool list back as it was, for the other tests.
                await client.call_tool("test_trigger_tool_change", {})
                again = await tools_sub.next(timeout=5)
                assert again.method == "notifications/tools/list_changed"
            assert len(changed) == 2  # the ClientHandlers callback was told too
            # Left the blocks: the subscriptions are cancelled on the server, which no
            # longer has a listener to tell (the changes are published to none).
            before = len(everything)
            await client.call_tool("test_trigger_prompt_change", {})
            await client.call_tool("test_trigger_prompt_change", {})
            await trio.sleep(0.3)
            assert everything[before:] == []
            # And the session goes on.
            assert (await client.call_tool("test_simple_text", {})).content[0].text


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_iteration_until_the_block_ends(transport: str, http_url: str) -> None:
    seen: list[str] = []
    with trio.fail_after(30):
        async with _connect(transport, http_url) as client:
            async with client.listen(prompts=True) as sub:
                async with trio.open_nursery() as nursery:
                    async def read() -> None:
                        async for note in sub:
                            seen.append(note.method)
                            if len(seen) == 2:
                                return

                    nursery.start_soon(read)
                    await client.call_tool("test_trigger_prompt_change", {})
                    await client.call_tool("test_trigger_prompt_change", {})
    assert seen == ["notifications/prompts/list_changed"] * 2


class _Tap(trio.abc.Stream):
    """A TCP stream that keeps a copy of every byte the client sends."""

    def __init__(self, inner: trio.abc.Stream, sent: list[bytes]) -> None:
        self.inner, self.sent = inner, sent

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_leaving_the_block_ends_the_listen_request_on_the_server() -> None:
    # In process, to see the server's side: over HTTP the cancellation is the closed
    # stream (no notifications/cancelled is POSTed), and the handler ends with it.
    server = Server("listen-server", version="1.0.0")

    @server.tool()
    async def poke() -> str:
        """Changes the tool list."""
        await server.notify_tools_list_changed()
        return "poked"

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(lambda task_status: serve_http(
                server, port=0, quiet=True, task_status=task_status))
            sent: list[bytes] = []

            async def open_stream(host: str, port: int) -> trio.abc.Stream:
                return _Tap(await trio.open_tcp_stream(host, port), sent)

            async with connect_http(url, timeout=10, open_stream=open_stream) as client:
                async with client.listen(tools=True) as sub:
                    assert len(server.listen_hub.listeners) == 1
                    await client.call_tool("poke", {})
                    assert (await sub.next(timeout=5)).method == (
                        "notifications/tools/list_changed")
                for _ in range(1000):
                    if not server.listen_hub.listeners:
                        break
                    await trio.sleep(0.01)
                assert not server.listen_hub.listeners
                assert sub.ended is None  # we ended it; the server did not
            assert not any(b"notifications/cancelled" in chunk for chunk in sent)
            assert any(b"subscriptions/listen" in chunk for chunk in sent)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_shutting_down_ends_listens_gracefully(
        transport: str, own_http_server: tuple[str, subprocess.Popen[bytes]]) -> None:
    # SIGTERM: each open listen is answered with its completion result (tagged with its
    # subscription id) before the server exits; the client's iteration just ends.
    url, proc = own_http_server
    with trio.fail_after(30):
        async with _connect(transport, url) as client:
            async with client.listen(tools=True) as sub, client.listen(prompts=True) as other:
                if transport == "stdio":
                    client.session.transport.process.send_signal(signal.SIGTERM)
                else:
                    proc.send_signal(signal.SIGTERM)
                assert [n async for n in sub] == []
                assert [n async for n in other] == []
                for one in (sub, other):
                    assert one.ended == "complete"
                    assert one.result is not None
                    assert one.result["resultType"] == "complete"
                    assert one.result["_meta"][
                        "io.modelcontextprotocol/subscriptionId"] == one.id


async def test_end_of_input_answers_an_open_listen_at_once() -> None:
    # Over stdio a client that closes its output with a listen open gets the graceful
    # answer right away, not after the drain timeout.
    server = Server("eof-server", version="1.0.0")

    @server.tool()
    async def noop() -> str:
        """Gives the server the tools capability."""
        return "ok"

    ours, theirs = memory_pair()
    session = server.new_session(theirs)
    session.limits = Limits(drain_timeout=30.0)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.run)
            await ours.send([(orjson.dumps({
                "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}}), None)])
            ack = orjson.loads(await ours.receive())
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            await ours._send.aclose()  # end of the server's input, as stdin closing
            answer = orjson.loads(await ours.receive())
            assert answer["id"] == 7
            assert answer["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
            await session.closed.wait()


async def test_a_server_may_end_a_listen_by_cancelling_it() -> None:
    # The other form of a server's teardown (the cancellation page's): a
    # notifications/cancelled naming the listen request. The raw peer is scripted here.
    ours, peer = memory_pair()
    with trio.fail_after(10):
        async with connect_transport(ours, mode="2026-07-28") as client:
            async with trio.open_nursery() as nursery:
                async def server_side() -> None:
                    request = orjson.loads(await peer.receive())
                    assert request["method"] == "subscriptions/listen"
                    assert request["params"]["notifications"] == {"resourcesListChanged": True}
                    tag = {"io.modelcontextprotocol/subscriptionId": request["id"]}
                    for message in (
                        {"method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": tag, "notifications": {}}},
                        {"method": "notifications/resources/list_changed",
                         "params": {"_meta": tag}},
                        {"method": "notifications/cancelled",
                         "params": {"requestId": request["id"], "reason": "shutting down"}},
                    ):
                        await peer.send([(orjson.dumps({"jsonrpc": "2.0", **message}), None)])

                nursery.start_soon(server_side)
                async with client.listen(resources=True) as sub:
                    assert sub.acknowledged == {}  # the server agreed to nothing...
                    notes = [n.method async for n in sub]  # ...but sent one anyway
            assert notes == ["notifications/resources/list_changed"]
            assert sub.ended == "cancelled"


async def test_the_same_listen_in_a_handshake_session() -> None:
    # No subscriptions/listen before 2026-07-28: the block subscribes to the URIs, and
    # the subscription hears what its filter takes, as it would over a listen.
    with trio.fail_after(30):
        async with connect_stdio([sys.executable, EXAMPLE], mode="legacy") as client:
            assert not client.stateless
            async with client.listen(tools=True, resource_uris=[WATCHED]) as sub:
                assert (sub.acknowledged or {}).get("resourceSubscriptions") == [WATCHED]
                await client.call_tool("test_update_watched_resource", {})
                await client.call_tool("test_trigger_tool_change", {})
                got = {(await sub.next(timeout=5)).method for _ in range(2)}
                assert got == {"notifications/resources/updated",
                               "notifications/tools/list_changed"}
                await client.call_tool("test_trigger_tool_change", {})  # put it back
                assert (await sub.next(timeout=5)).method == \
                    "notifications/tools/list_changed"
            # Left the block: unsubscribed, and the iteration has ended.
            with pytest.raises(StopAsyncIteration):
                await sub.next(timeout=1)
