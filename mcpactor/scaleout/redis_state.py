""":class:`SharedState` on Redis, through coredis (``mcpactor[redis]``).

coredis runs on Trio (it is written on anyio). Keys are plain strings with ``PX`` time
to live; logs are Redis streams (``XADD ... MAXLEN ~``, ``XRANGE``, ``XREAD BLOCK``);
broadcast is pub/sub. Two multi-step operations are Lua scripts, so each is one atomic
round trip: compare-and-set, and appends with expiry (one entry, or a batch of entries
to several logs: :meth:`RedisState.append_many`). A script touching several keys needs
them on one server: Redis Cluster is not supported (see ``docs/scale-out.md``).

Every call is bounded by ``op_timeout`` (a blocking read by its own wait plus that):
Redis down, restarting or not answering is a :class:`SharedStateError` naming the
address, never a hang. coredis reconnects by itself on the next call, so the store
recovers when Redis comes back.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

import attrs
import trio

from mcpactor.scaleout.state import Append, Entry, SharedStateError

__all__ = ["RedisAddress", "RedisState", "open_redis_state", "parse_redis_url"]

_CAS = """
local cur = redis.call('GET', KEYS[1])
if (ARGV[1] == '0' and cur == false) or (ARGV[1] == '1' and cur == ARGV[2]) then
  if tonumber(ARGV[4]) > 0 then
    redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[1], ARGV[3])
  end
  return 1
end
return 0
"""

# Appends to one or more logs, in order: per key, ARGV holds the number of field and
# value strings, MAXLEN, the TTL in ms (0: none), then the fields and values.
_APPEND = """
local ids = {}
local a = 1
for i, key in ipairs(KEYS) do
  local n = tonumber(ARGV[a])
  ids[i] = redis.call('XADD', key, 'MAXLEN', '~', ARGV[a + 1], '*', unpack(ARGV, a + 3, a + 2 + n))
  if tonumber(ARGV[a + 2]) > 0 then redis.call('PEXPIRE', key, ARGV[a + 2]) end
  a = a + 3 + n
end
return ids
"""


@attrs.frozen(kw_only=True)
class RedisAddress:
    """A parsed Redis URL: ``redis://[user:password@]host[:port][/db]``, or through
    Sentinel ``redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[/db]``
    (``sentinels``: the Sentinels' addresses; ``service``: the monitored primary's name;
    the credentials are the primary's). ``rediss`` and ``rediss+sentinel``: TLS."""

    host: str
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    tls: bool = False
    sentinels: tuple[tuple[str, int], ...] = ()
    service: str | None = None

    def display(self) -> str:
        """The URL without its credentials (for messages and logs)."""
        scheme = "rediss" if self.tls else "redis"
        if self.sentinels:
            hosts = ",".join(f"{_bracket(h)}:{p}" for h, p in self.sentinels)
            return f"{scheme}+sentinel://{hosts}/{self.service}/{self.db}"
        return f"{scheme}://{_bracket(self.host)}:{self.port}/{self.db}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


_FORM = ("expected redis://HOST:PORT/DB (e.g. redis://127.0.0.1:6379/0), or "
         "redis+sentinel://HOST:PORT[,HOST:PORT...]/SERVICE/DB through Redis Sentinel "
         "(Redis Cluster is not supported)")


def parse_redis_url(url: str) -> RedisAddress:
    """Parse a Redis URL; ``ValueError`` naming what is wrong and the expected form."""
    text = url.strip()
    scheme = text.partition("://")[0].lower()
    if scheme in ("redis+sentinel", "rediss+sentinel"):
        return _parse_sentinel_url(url, text, tls=scheme == "rediss+sentinel")
    if scheme in ("redis+cluster", "rediss+cluster"):
        raise ValueError(f"bad Redis URL {url!r}: Redis Cluster is not supported (scale-out's "
                         "scripts write several keys at once, which a cluster splits over "
                         "its nodes); use one Redis server, or Sentinel for failover")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad Redis URL {url!r}: {exc}; {_FORM}") from None
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"bad Redis URL {url!r}: the scheme must be redis://, rediss:// or "
                         f"redis+sentinel://; {_FORM}")
    if not parts.hostname:
        raise ValueError(f"bad Redis URL {url!r}: no host; {_FORM}")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ValueError(f"bad Redis URL {url!r}: the database must be a number; {_FORM}")
    return RedisAddress(
        host=parts.hostname, port=port or 6379, db=int(path or 0),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=parts.scheme == "rediss",
    )


def _parse_sentinel_url(url: str, text: str, *, tls: bool) -> RedisAddress:
    rest = text.split("://", 1)[1]
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    if not at:
        hosts, userinfo = netloc, ""
    sentinels: list[tuple[str, int]] = []
    for item in hosts.split(","):
        try:
            parts = urlsplit(f"//{item}")
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"bad Redis URL {url!r}: {exc}; {_FORM}") from None
        if not parts.hostname:
            raise ValueError(f"bad Redis URL {url!r}: a Sentinel without a host; {_FORM}")
        sentinels.append((parts.hostname, port or 26379))
    service, _, db = path.strip("/").partition("/")
    if not service:
        raise ValueError(f"bad Redis URL {url!r}: no service name (the primary's name in "
                         f"the Sentinels' configuration); {_FORM}")
    if db and not db.isdigit():
        raise ValueError(f"bad Redis URL {url!r}: the database must be a number; {_FORM}")
    username, _, password = userinfo.partition(":")
    return RedisAddress(
        host=sentinels[0][0], port=sentinels[0][1], db=int(db or 0),
        username=unquote(username) or None, password=unquote(password) or None, tls=tls,
        sentinels=tuple(sentinels), service=unquote(service),
    )


def _ms(seconds: float | None) -> int:
    return 0 if seconds is None else max(1, math.ceil(seconds * 1000))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisState:
    """:class:`SharedState` on one Redis server (see the module's docstring)."""

    def __init__(self, url: str, *, op_timeout: float = 5.0, max_connections: int = 64) -> None:
        from mcpactor.extras import require

        coredis = require("coredis", "--redis (shared state in Redis)")
        self.address = parse_redis_url(url)
        self.name = self.address.display()
        self.op_timeout = op_timeout
        a = self.address
        self._coredis = coredis
        connect = min(op_timeout, 2.0)
        #: What open_redis_state enters (a Sentinel's own clients come first).
        self._contexts: list[Any] = []
        if a.sentinels:
            # Sentinel tells where the primary is, and again after a failover.
            sentinel = coredis.Sentinel(
                [coredis.connection.TCPLocation(h, p) for h, p in a.sentinels],
                sentinel_kwargs={"connect_timeout": connect})
            tls: dict[str, Any] = {}
            if a.tls:
                import ssl

                tls["ssl_context"] = ssl.create_default_context()
            self._client = sentinel.primary_for(
                a.service, db=a.db, username=a.username, password=a.password,
                connect_timeout=connect, max_connections=max_connections,
                decode_responses=False, **tls)
            self._contexts.append(sentinel)
        else:
            self._client = coredis.Redis(
                host=a.host, port=a.port, db=a.db, username=a.username, password=a.password,
                ssl=a.tls, connect_timeout=connect, max_connections=max_connections,
                decode_responses=False, verify_version=False,
            )
        self._contexts.append(self._client)

    async def _open(self) -> Any:
        await trio.lowlevel.checkpoint()
        return self._client

    async def _call(self, what: str, make: Any, timeout: float | None = None) -> Any:
        """Run one command, turning every failure into a SharedStateError."""
        bound = self.op_timeout if timeout is None else timeout
        try:
            with trio.fail_after(bound):
                client = await self._open()
                return await make(client)
        except trio.TooSlowError:
            raise SharedStateError(f"Redis at {self.name} did not answer {what} within "
                                   f"{bound:.1f}s") from None
        except (OSError, self._coredis.exceptions.RedisError) as exc:
            raise SharedStateError(f"Redis at {self.name} failed {what}: "
                                   f"{exc or type(exc).__name__}") from None
        except BaseExceptionGroup as group:
            # coredis's own task groups wrap the error it met.
            leaf = next(iter(_leaves(group)), group)
            if isinstance(leaf, (OSError, self._coredis.exceptions.RedisError)):
                raise SharedStateError(f"Redis at {self.name} failed {what}: "
                                       f"{leaf or type(leaf).__name__}") from None
            raise

    # -- keys -------------------------------------------------------------------------

    async def get(self, key: str) -> bytes | None:
        """See :meth:`SharedState.get`."""
        value = await self._call("GET", lambda c: c.get(key))
        return None if value is None else bytes(value)

    async def set(
        self, key: str, value: bytes, *, ttl: float | None = None, only_if_absent: bool = False
    ) -> bool:
        """See :meth:`SharedState.set`."""
        nx = self._coredis.PureToken.NX if only_if_absent else None
        px = _ms(ttl) or None
        result = await self._call("SET", lambda c: c.set(key, value, condition=nx, px=px))
        return bool(result)

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes, *, ttl: float | None = None
    ) -> bool:
        """See :meth:`SharedState.compare_and_set`."""
        args = ["0" if expected is None else "1", expected or b"", value, str(_ms(ttl))]
        result = await self._call("compare-and-set",
                                  lambda c: c.eval(_CAS, keys=[key], args=args))
        return int(result) == 1

    async def delete(self, *keys: str) -> None:
        """See :meth:`SharedState.delete`."""
        if keys:
            await self._call("DEL", lambda c: c.delete(list(keys)))

    async def touch(self, key: str, ttl: float) -> None:
        """See :meth:`SharedState.touch`."""
        await self._call("PEXPIRE", lambda c: c.pexpire(key, _ms(ttl)))

    # -- logs -------------------------------------------------------------------------

    async def append(
        self, log: str, fields: Mapping[str, bytes], *, max_len: int, ttl: float | None = None
    ) -> str:
        """See :meth:`SharedState.append`."""
        return (await self.append_many([(log, fields, max_len, ttl)]))[0]

    async def append_many(self, appends: Sequence[Append]) -> list[str]:
        """See :meth:`SharedState.append_many`: one script, one round trip."""
        keys: list[str] = []
        args: list[Any] = []
        for log, fields, max_len, ttl in appends:
            keys.append(log)
            args += [str(2 * len(fields)), str(max_len), str(_ms(ttl))]
            for name, value in fields.items():
                args += [name, value]
        result = await self._call("XADD", lambda c: c.eval(_APPEND, keys=keys, args=args))
        return [_text(r) for r in result]

    async def read_range(self, log: str, after: str = "0", count: int | None = None) -> list[Entry]:
        """See :meth:`SharedState.read_range`."""
        start = "-" if after in ("0", "0-0") else f"({after}"
        found = await self._call("XRANGE", lambda c: c.xrange(log, start, "+", count=count))
        return [_entry(e) for e in found or ()]

    async def read_new(self, log: str, after: str, timeout: float) -> list[Entry]:
        """See :meth:`SharedState.read_new`."""
        block = _ms(timeout)
        found = await self._call(
            "XREAD", lambda c: c.xread({log: after}, block=block),
            timeout=timeout + self.op_timeout)
        if not found:
            return []
        out: list[Entry] = []
        for entries in found.values():
            out += [_entry(e) for e in entries]
        return out

    # -- broadcast --------------------------------------------------------------------

    async def publish(self, channel: str, data: bytes) -> None:
        """See :meth:`SharedState.publish`."""
        await self._call("PUBLISH", lambda c: c.publish(channel, data))

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        """See :meth:`SharedState.subscribe`. A lost connection ends the iteration with
        :class:`SharedStateError` (the caller subscribes again)."""
        pubsub = self._client.pubsub(channels=[channel], ignore_subscribe_messages=True,
                                     retry_policy=None)
        errors = (OSError, self._coredis.exceptions.RedisError)
        entered = False
        try:
            async with pubsub:
                entered = True
                yield self._messages(pubsub)
        except errors as exc:
            raise SharedStateError(f"Redis at {self.name}: subscription to {channel} "
                                   f"{'lost' if entered else 'failed'}: "
                                   f"{exc or type(exc).__name__}") from None
        except BaseExceptionGroup as group:
            leaves = _leaves(group)
            if len(leaves) == 1 and isinstance(leaves[0], (*errors, SharedStateError)):
                if isinstance(leaves[0], SharedStateError):
                    raise leaves[0] from None
                raise SharedStateError(f"Redis at {self.name}: subscription to {channel} "
                                       f"{'lost' if entered else 'failed'}: "
                                       f"{leaves[0] or type(leaves[0]).__name__}") from None
            raise

    async def _messages(self, pubsub: Any) -> AsyncIterator[bytes]:
        try:
            async for message in pubsub:
                if message.get("type") == "message":
                    yield bytes(message["data"])
        except (OSError, self._coredis.exceptions.RedisError, BaseExceptionGroup) as exc:
            raise SharedStateError(f"Redis at {self.name}: subscription lost: "
                                   f"{exc or type(exc).__name__}") from None
        raise SharedStateError(f"Redis at {self.name}: subscription ended")

    async def aclose(self) -> None:
        """Nothing: :func:`open_redis_state` owns the connections."""
        await trio.lowlevel.checkpoint()


@asynccontextmanager
async def open_redis_state(
    url: str, *, op_timeout: float = 5.0, max_connections: int = 64
) -> AsyncIterator[RedisState]:
    """A :class:`RedisState` for the block (coredis's pool runs its tasks in the
    block's task). Redis need not be up yet: calls fail with
    :class:`SharedStateError` until it is."""
    state = RedisState(url, op_timeout=op_timeout, max_connections=max_connections)
    try:
        async with AsyncExitStack() as stack:
            for context in state._contexts:
                await stack.enter_async_context(context)
            yield state
    except BaseExceptionGroup as group:
        # coredis's task group wraps what left the block: let a lone error be itself.
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


async def _identity(client: Any) -> Any:
    await trio.lowlevel.checkpoint()
    return client


def _entry(raw: Any) -> Entry:
    fields = {_text(k): bytes(v) for k, v in raw.field_values.items()}
    return _text(raw.identifier), fields


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out += _leaves(exc)
        else:
            out.append(exc)
    return out
