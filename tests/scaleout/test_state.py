"""The shared-state contract, on both implementations: MemoryState and RedisState on a
real redis-server. Plus the state signer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
from scaleout_support import RedisSentinel, RedisServer, need_programs

from mcpactor.scaleout.group_commit import GroupCommit
from mcpactor.scaleout.redis_state import open_redis_state, parse_redis_url
from mcpactor.scaleout.signing import InvalidState, StateSigner
from mcpactor.scaleout.state import MemoryState, SharedState, SharedStateError


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need_programs()
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sentinel_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Sentinel watching a primary of its own: the URL reaches the primary through it."""
    need_programs()
    folder = tmp_path_factory.mktemp("sentinel")
    primary = RedisServer(folder)
    primary.start()
    try:
        sentinel = RedisSentinel(folder, primary)
        try:
            yield sentinel.url
        finally:
            sentinel.stop()
    finally:
        primary.stop()


@pytest.fixture(params=["memory", "redis", "sentinel"])
async def state(request: pytest.FixtureRequest) -> AsyncIterator[SharedState]:
    if request.param == "memory":
        yield MemoryState()
        return
    url = request.getfixturevalue(f"{request.param}_url")
    async with open_redis_state(url) as redis:
        # Fresh keys per test: the server is shared by the module.
        await redis._client.flushdb()
        yield redis


async def test_keys(state: SharedState) -> None:
    assert await state.get("a") is None
    assert await state.set("a", b"1")
    assert await state.get("a") == b"1"
    assert not await state.set("a", b"2", only_if_absent=True)
    assert await state.compare_and_set("a", b"1", b"3")
    assert not await state.compare_and_set("a", b"1", b"4")
    assert await state.compare_and_set("b", None, b"x")
    assert not await state.compare_and_set("b", None, b"y")
    assert await state.get("b") == b"x"
    await state.delete("a", "b")
    assert await state.get("a") is None and await state.get("b") is None


async def test_ttl(state: SharedState) -> None:
    await state.set("t", b"v", ttl=0.2)
    await state.append("log", {"f": b"1"}, max_len=10, ttl=0.2)
    await state.touch("log", 5)
    await trio.sleep(0.4)
    assert await state.get("t") is None
    assert len(await state.read_range("log")) == 1


async def test_logs(state: SharedState) -> None:
    ids = [await state.append("l", {"n": b"%d" % i, "d": b"\x00\xff"}, max_len=1000)
           for i in range(5)]
    entries = await state.read_range("l")
    assert [e[0] for e in entries] == ids
    assert [e[1]["n"] for e in entries] == [b"0", b"1", b"2", b"3", b"4"]
    assert entries[0][1]["d"] == b"\x00\xff"
    assert [e[1]["n"] for e in await state.read_range("l", after=ids[2])] == [b"3", b"4"]
    assert await state.read_new("l", ids[-1], timeout=0.1) == []

    async def later() -> None:
        await trio.sleep(0.1)
        await state.append("l", {"n": b"new"}, max_len=1000)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        with trio.fail_after(5):
            found = await state.read_new("l", ids[-1], timeout=3)
    assert [e[1]["n"] for e in found] == [b"new"]


async def test_append_many_in_order_across_logs(state: SharedState) -> None:
    ids = await state.append_many([
        ("m1", {"n": b"0"}, 1000, None),
        ("m2", {"n": b"a", "x": b"\x00"}, 1000, 0.2),
        ("m1", {"n": b"1", "y": b"", "z": b"z"}, 1000, None),
    ])
    assert len(ids) == 3
    assert [(i, f) for i, f in await state.read_range("m1")] == [
        (ids[0], {"n": b"0"}), (ids[2], {"n": b"1", "y": b"", "z": b"z"})]
    assert await state.read_range("m2") == [(ids[1], {"n": b"a", "x": b"\x00"})]
    await trio.sleep(0.4)
    assert await state.read_range("m2") == []  # its TTL ran out; m1 has none
    assert len(await state.read_range("m1")) == 2


async def test_group_commit_batches_concurrent_appends(state: SharedState) -> None:
    batcher = GroupCommit(state)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(batcher.run)
        await trio.lowlevel.checkpoint()  # batcher.run starts
        got: dict[int, str] = {}

        async def one(n: int) -> None:
            got[n] = await batcher.append("g", {"n": b"%d" % n}, max_len=1000)

        async with trio.open_nursery() as writers:
            for n in range(50):
                writers.start_soon(one, n)
        nursery.cancel_scope.cancel()
    entries = await state.read_range("g")
    # Every append stored once, under the id it was given; the 50 concurrent ones
    # went in far fewer writes.
    assert len(entries) == 50
    assert {int(e[1]["n"]): e[0] for e in entries} == got
    assert batcher.entries == 50 and batcher.writes < 10


async def test_group_commit_failure_reaches_every_append(tmp_path: Path) -> None:
    need_programs()
    server = RedisServer(tmp_path)  # never started
    with trio.fail_after(10):
        async with open_redis_state(server.url, op_timeout=1) as redis:
            batcher = GroupCommit(redis)
            failures: list[str] = []

            async def one() -> None:
                with pytest.raises(SharedStateError) as err:
                    await batcher.append("g", {"a": b"b"}, max_len=10)
                failures.append(str(err.value))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(batcher.run)
                async with trio.open_nursery() as writers:
                    for _ in range(5):
                        writers.start_soon(one)
                nursery.cancel_scope.cancel()
    assert len(failures) == 5 and all(str(server.port) in f for f in failures)


async def test_publish_subscribe(state: SharedState) -> None:
    async with state.subscribe("ch") as messages:
        await trio.sleep(0.05)
        await state.publish("ch", b"one")
        await state.publish("other", b"not for us")
        await state.publish("ch", b"two")
        got = []
        with trio.fail_after(5):
            async for data in messages:
                got.append(data)
                if len(got) == 2:
                    break
    assert got == [b"one", b"two"]


async def test_redis_down_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    need_programs()
    server = RedisServer(tmp_path)  # never started: nothing listens on its port
    with trio.fail_after(10):
        async with open_redis_state(server.url, op_timeout=2) as redis:
            with pytest.raises(SharedStateError, match=f"127.0.0.1:{server.port}"):
                await redis.get("x")
            with pytest.raises(SharedStateError):
                await redis.append("l", {"a": b"b"}, max_len=10)


async def test_sentinel_failover_moves_the_store_to_the_new_primary(tmp_path: Path) -> None:
    """The primary dies; Sentinel promotes its replica; calls fail clearly meanwhile and
    then reach the new primary, which has the data."""
    need_programs()
    primary = RedisServer(tmp_path)
    primary.start()
    replica = RedisServer(tmp_path, replica_of=primary.port)
    replica.start()
    sentinel = RedisSentinel(tmp_path, primary)
    try:
        with trio.fail_after(60):
            async with open_redis_state(sentinel.url, op_timeout=1) as redis:
                await redis.set("kept", b"1")
                await redis.append("log", {"n": b"1"}, max_len=10)
                # Replicated before the primary goes.
                async with open_redis_state(replica.url) as copy:
                    while await copy.get("kept") is None:  # noqa: ASYNC110 - polling a server
                        await trio.sleep(0.05)
                primary.kill()
                failures: list[str] = []
                while True:
                    try:
                        await redis.set("after", b"2")
                        break
                    except SharedStateError as exc:
                        failures.append(str(exc))
                        await trio.sleep(0.2)
                assert failures and all("redis+sentinel://" in f for f in failures)
                assert await redis.get("kept") == b"1"
                assert [e[1] for e in await redis.read_range("log")] == [{"n": b"1"}]
    finally:
        sentinel.stop()
        replica.stop()
        primary.stop()


def test_redis_urls() -> None:
    a = parse_redis_url("redis://:secret@10.0.0.5:6380/3")
    assert (a.host, a.port, a.db, a.password) == ("10.0.0.5", 6380, 3, "secret")
    assert "secret" not in a.display() and "secret" not in repr(a)
    for bad in ("http://x", "redis://", "redis://h:port/0", "redis://h/db",
                "redis+sentinel://h:1", "redis+sentinel://h:x/mcp", "redis+sentinel://h/mcp/x",
                "redis+sentinel://,h/mcp"):
        with pytest.raises(ValueError, match="expected redis://HOST:PORT/DB"):
            parse_redis_url(bad)
    s = parse_redis_url("redis+sentinel://u:pw@10.0.0.1,10.0.0.2:26380,[::1]/main/2")
    assert s.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26380), ("::1", 26379))
    assert (s.service, s.db, s.username, s.password) == ("main", 2, "u", "pw")
    assert s.display() == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26380,[::1]:26379/main/2"
    assert "pw" not in repr(s)
    with pytest.raises(ValueError, match="Redis Cluster is not supported"):
        parse_redis_url("redis+cluster://h:7000")


def test_signer() -> None:
    signer = StateSigner("k" * 32)
    token = signer.sign(b'{"step":2}')
    assert signer.verify(token) == b'{"step":2}'
    with pytest.raises(InvalidState):
        StateSigner("j" * 32).verify(token)
    with pytest.raises(InvalidState):
        signer.verify(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1])
    with pytest.raises(InvalidState):
        signer.verify("garbage")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        StateSigner("short")
    assert "k" * 32 not in repr(signer)
