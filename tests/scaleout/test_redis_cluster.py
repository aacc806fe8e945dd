"""Three ``mcpactor run --redis`` processes behind haproxy (round-robin per request, no
stickiness), sharing a real redis-server, driven by the official ``mcp`` 2.3.0 client
and by mcpactor's own client: everything a stateful session does works whatever worker
each request lands on; a worker killed mid-stream hands its sessions over; Redis going
away is a clear error and the deployment recovers when it returns."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import types as mt
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from scaleout_support import Haproxy, RedisServer, need_programs, start_worker, stop

from mcpactor import connect_http

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@dataclass
class Deployment:
    redis: RedisServer
    workers: list[subprocess.Popen[bytes]]
    ports: list[int]
    balancer: Haproxy
    folder: Path
    extra: tuple[str, ...] = field(default=())

    @property
    def url(self) -> str:
        return self.balancer.url

    def pids(self) -> set[int]:
        return {w.pid for w in self.workers}


def _deploy(tmp_path: Path, *extra: str) -> Iterator[Deployment]:
    need_programs()
    redis = RedisServer(tmp_path)
    redis.start()
    workers: list[subprocess.Popen[bytes]] = []
    balancer: Haproxy | None = None
    try:
        ports = []
        for _ in range(3):
            proc, port = start_worker(tmp_path, redis.url, *extra)
            workers.append(proc)
            ports.append(port)
        balancer = Haproxy(tmp_path, ports)
        yield Deployment(redis, workers, ports, balancer, tmp_path, extra)
    finally:
        if balancer is not None:
            balancer.stop()
        for w in workers:
            stop(w)
        redis.stop()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    yield from _deploy(tmp_path)


@pytest.fixture
def sse_deployment(tmp_path: Path) -> Iterator[Deployment]:
    # Every answer an SSE stream with a priming event: resumable from its first byte.
    yield from _deploy(tmp_path, "--sse-response")


@asynccontextmanager
async def sdk_session(url: str, **callbacks: Any) -> AsyncIterator[ClientSession]:
    failure: BaseException | None = None
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write, read_timeout_seconds=30, **callbacks) as session:
            try:
                yield session
            except Exception as exc:
                failure = exc
    if failure is not None:
        raise failure


def _text(result: mt.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def test_sdk_session_works_whatever_worker_each_request_lands_on(
    deployment: Deployment,
) -> None:
    sampled: list[str] = []

    async def sampling(ctx: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        sampled.append(params.messages[0].content.text)  # type: ignore[union-attr]
        return mt.CreateMessageResult(role="assistant", model="m",
                                      content=mt.TextContent(type="text", text="forty-two"))

    async def roots(ctx: Any) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri="file:///a"), mt.Root(uri="file:///b")])

    logs: list[str] = []

    async def logging_cb(params: mt.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    with trio.fail_after(60):
        async with sdk_session(deployment.url, sampling_callback=sampling,
                               list_roots_callback=roots, logging_callback=logging_cb) as s:
            await s.initialize()
            # Every request of the session is answered by its owner, wherever it landed.
            owners = {_text(await s.call_tool("whoami", {})) for _ in range(6)}
            assert len(owners) == 1 and int(owners.pop()) in deployment.pids()
            progress: list[float] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append(p)

            result = await s.call_tool("slow_count", {"n": 4, "delay": 0.05},
                                       progress_callback=on_progress)
            assert _text(result).startswith("counted 4")
            assert progress == [1, 2, 3, 4]
            await s.set_logging_level("info")
            await s.call_tool("slow_count", {"n": 2, "delay": 0.01})
            with trio.fail_after(10):
                while len([x for x in logs if x.startswith("step")]) < 2:  # noqa: ASYNC110 - callbacks offer no event
                    await trio.sleep(0.05)
            answer = _text(await s.call_tool("ask", {"question": "meaning?"}))
            assert answer.split("|")[:2] == ["forty-two", "2"]
            assert sampled == ["meaning?"]


async def test_notifications_fan_out_to_sessions_of_every_worker(deployment: Deployment) -> None:
    """Sessions owned by different workers; a change made in one reaches them all."""
    heard: dict[int, list[str]] = {}

    def handler(n: int) -> Any:
        async def on_message(message: Any) -> None:
            method = getattr(message, "method", None)
            if isinstance(method, str):
                heard.setdefault(n, []).append(method)
        return on_message

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            owners: dict[int, str] = {}
            done = trio.Event()
            ready = trio.Semaphore(0)

            async def client(n: int) -> None:
                async with sdk_session(deployment.url, message_handler=handler(n)) as s:
                    await s.initialize()
                    await s.subscribe_resource("memo://one")  # type: ignore[arg-type]
                    owners[n] = _text(await s.call_tool("whoami", {}))
                    ready.release()
                    await done.wait()

            for n in range(6):
                nursery.start_soon(client, n)
            for _ in range(6):
                await ready.acquire()
            # Sessions are spread over the workers by the balancer's round robin.
            assert len(set(owners.values())) >= 2
            await trio.sleep(0.5)  # every client's GET stream is open
            async with sdk_session(deployment.url) as s:
                await s.initialize()
                await s.call_tool("touch", {"uri": "memo://one"})
            with trio.fail_after(10):
                while not all(  # noqa: ASYNC110 - callbacks offer no event
                    {"notifications/resources/updated", "notifications/resources/list_changed"}
                    <= set(heard.get(n, [])) for n in range(6)
                ):
                    await trio.sleep(0.05)
            done.set()


async def test_owner_killed_mid_stream_resumes_on_another_worker(
    sse_deployment: Deployment,
) -> None:
    """kill -9 the owner while a call streams progress: the SDK client resumes with
    Last-Event-ID through another worker, which takes the session over; no progress
    event is lost or repeated, the call in flight is answered with a clear error, and
    the session goes on."""
    d = sse_deployment
    progress: list[float] = []
    with trio.fail_after(90):
        async with sdk_session(d.url) as s:
            await s.initialize()
            owner = int(_text(await s.call_tool("whoami", {})))
            victim = next(w for w in d.workers if w.pid == owner)

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append(p)
                if p == 3:
                    victim.send_signal(signal.SIGKILL)

            with pytest.raises(MCPError, match="stopped before answering"):
                await s.call_tool("slow_count", {"n": 50, "delay": 0.1},
                                  progress_callback=on_progress)
            victim.wait(5)
            # Events 1..3 (and any the old owner logged before it died) arrive once
            # each, in order: nothing lost, nothing repeated.
            assert progress[:3] == [1, 2, 3]
            assert progress == [float(i) for i in range(1, len(progress) + 1)], progress
            # The next call is served at once by the worker that takes the session over
            # (a request the dead owner never took is safe to run elsewhere).
            new_owner = int(_text(await s.call_tool("whoami", {})))
            assert new_owner != owner and new_owner in d.pids()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_our_client_through_the_balancer(deployment: Deployment, mode: str) -> None:
    with trio.fail_after(30):
        async with connect_http(deployment.url, mode=mode) as client:
            seen: list[float] = []
            owners = {str((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
                      for _ in range(6)}
            if mode == "legacy":
                assert len(owners) == 1  # one session, served by its owner
            else:
                # 2026-07-28: no session; each request is served where it lands.
                assert client.protocol_version == "2026-07-28"
                assert {int(o) for o in owners} <= set(deployment.pids())
            result = await client.call_tool(
                "slow_count", {"n": 3, "delay": 0.05},
                on_progress=lambda p, total, message: seen.append(p))
            assert "counted 3" in str(result.content[0].text)  # type: ignore[union-attr]
            assert seen == [1, 2, 3]


async def test_redis_restart_is_a_clear_error_then_recovers(deployment: Deployment) -> None:
    d = deployment
    with trio.fail_after(60):
        # Sessions (the handshake era) live in the shared store; 2026-07-28 requests
        # have none and need no store at all.
        async with connect_http(d.url, mode="legacy") as client, \
                connect_http(d.url) as stateless:
            await client.call_tool("whoami", {})
            assert stateless.protocol_version == "2026-07-28"
            d.redis.kill()
            for _ in range(3):
                assert (await stateless.call_tool("whoami", {})).content
            errors: list[str] = []
            for _ in range(6):
                try:
                    await client.call_tool("whoami", {})
                except Exception as exc:  # what the client raises for a 503
                    errors.append(str(exc))
            # Some requests land on the owner (which needs Redis to log them) and all
            # others need it to find the owner: each fails at once, naming Redis.
            assert errors and all("503" in e or "shared session store" in e for e in errors), errors
            d.redis.start()
            # Redis came back empty (no persistence): within a heartbeat the owner
            # registers its sessions again (a request before that gets 404).
            await trio.sleep(1.5)
            with trio.fail_after(15):
                while True:
                    try:
                        answers = {str((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
                                   for _ in range(6)}
                        break
                    except Exception:
                        await trio.sleep(0.2)
            assert len(answers) == 1


async def test_redis_restart_under_load(deployment: Deployment) -> None:
    """Six sessions (spread over the three workers, so that most requests are relayed)
    call tools back to back while Redis is killed and started again (empty: no
    persistence). Every call in the outage either succeeds or fails at once with an
    error naming the shared store (or the spec's 404 answered by a new session): none
    hangs, none fails otherwise; and once Redis is back every session works again."""
    d = deployment
    errors: list[str] = []
    slow: list[float] = []
    ok_after: dict[int, int] = {}
    restarted = trio.Event()
    stop = trio.Event()

    async def load(n: int) -> None:
        async with connect_http(d.url, mode="legacy") as client:
            while not stop.is_set():
                started = trio.current_time()
                tool, args = (("slow_count", {"n": 2, "delay": 0.02}) if n % 2
                              else ("whoami", {}))
                with trio.move_on_after(20) as hung:
                    try:
                        await client.call_tool(tool, args, timeout=30)
                        if restarted.is_set():
                            ok_after[n] = ok_after.get(n, 0) + 1
                    except Exception as exc:
                        errors.append(f"{type(exc).__name__}: {exc}")
                        await trio.sleep(0.05)
                if hung.cancelled_caught:
                    errors.append("HUNG")
                slow.append(trio.current_time() - started)

    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(load, n)
            await trio.sleep(1.0)
            d.redis.kill()
            await trio.sleep(1.5)
            d.redis.start()
            restarted.set()
            # Every session recovers (registered again by its owner within a
            # heartbeat) and makes calls again.
            with trio.fail_after(30):
                while len([n for n in range(6) if ok_after.get(n, 0) >= 3]) < 6:  # noqa: ASYNC110 - the load loops offer no event
                    await trio.sleep(0.1)
            stop.set()
    assert errors, "the outage went unnoticed: the test did not test it"
    # Each names the shared store (the client shows the 503's JSON-RPC message).
    unclear = [e for e in errors if "shared session store" not in e]
    assert not unclear, unclear
    # A call that failed failed at once (the store's own bound is 5 s), never a hang.
    assert max(slow) < 12, max(slow)
