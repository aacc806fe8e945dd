"""Workers sharing Streamable HTTP sessions through a shared store (``--redis``).

Each legacy stateful session (``Mcp-Session-Id``) runs, as always, as one actor tree in
one worker: its *owner*. What the shared store adds (keys under ``prefix``):

- ``w:<worker>``: the worker is alive (a heartbeat renews it; it expires
  ``worker_ttl`` seconds after the worker stopped renewing it).
- ``o:<session>``: the session's owner; ``s:<session>``: what a new owner must replay
  to rebuild the session (the client's ``initialize``, whether it sent
  ``initialized``, its log level, its resource subscriptions).
- ``e:<session>``: the session's event log: every stream a POST opened (with its
  request ids) and every message the session sent, with the stream and sequence
  number it went out under, written *before* the message reaches any stream. So
  every event a client may hold the id of is in the log.
- ``q:<worker>``: the worker's inbox: requests relayed to it, and the pieces of the
  responses to the requests it relayed to others.
- ``bc``: the channel broadcast notifications fan out on.
- ``t:``, ``tl:``, ``tc:``, ``tx:``: tasks (:mod:`.task_store`), which any worker
  answers for, and whose messages reach sessions of every worker (:mod:`.task_relay`).

A request for a session of another worker (any load balancer, no stickiness) is
*relayed*: its method, headers and body go to the owner's inbox, the owner runs it
through its own app as if it had arrived there, and the response (a JSON body, an SSE
stream of any length) comes back piece by piece to the worker holding the client's
connection. Every behaviour (progress, logs, sampling, elicitation, roots, resumption)
is the owner's, through the one code path.

A worker that stops (a crash, ``kill -9``, a shutdown) leaves its sessions behind; the
next request for one of them finds the owner gone and *takes the session over*: a
compare-and-set makes this worker the owner, the session is rebuilt from its snapshot
(the ``initialize`` replayed, answers dropped) and its streams from the event log, and
every request that was in flight on the old owner is answered with an error (its
outcome is unknown: it is never run twice). A client resuming with ``Last-Event-ID``
gets exactly the events after that id.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import jsonrpc
from mcpactor.protocol.errors import INTERNAL_ERROR
from mcpactor.scaleout.group_commit import GroupCommit
from mcpactor.scaleout.signing import StateSigner
from mcpactor.scaleout.state import Entry, SharedState, SharedStateError
from mcpactor.scaleout.task_relay import TaskRelay
from mcpactor.scaleout.task_store import install_shared_tasks
from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Scope, Send
from mcpactor.transports.base import Outgoing
from mcpactor.transports.http_rules import Headers, HttpError

if TYPE_CHECKING:
    from mcpactor.transports.event_store import Stream
    from mcpactor.transports.http_server import McpHttpApp
    from mcpactor.transports.http_session import HttpSession

log = logging.getLogger("mcpactor.scaleout")

__all__ = ["WORKER_STOPPED_MESSAGE", "Cluster", "ClusterOptions", "open_cluster"]

#: The error a request gets when the worker running it stopped before answering.
WORKER_STOPPED_MESSAGE = ("the worker running this request stopped before answering; "
                          "its outcome is unknown (retry it if that is safe)")
_TAKEOVER = "mcpactor-takeover-"


@attrs.frozen(kw_only=True)
class ClusterOptions:
    """Keys, timings and bounds of a scale-out deployment."""

    #: Every key starts with this: deployments sharing one Redis use different ones.
    prefix: str = "mcpactor:"
    #: Seconds between a worker's heartbeats.
    heartbeat: float = 1.0
    #: Seconds without a heartbeat after which a worker counts as stopped (and its
    #: sessions may be taken over).
    worker_ttl: float = 3.0
    #: Seconds a session's keys live without activity (the HTTP idle timeout plus a
    #: margin; refreshed while the session is used).
    session_ttl: float = 1860.0
    #: Entries kept in a session's event log (oldest dropped first).
    max_log: int = 5000
    #: Entries kept in a worker's inbox, and seconds it lives after its last entry.
    max_inbox: int = 100_000
    inbox_ttl: float = 120.0
    #: Seconds the shared store is not tried again after it failed (so that a store
    #: that is down makes requests fail at once rather than each waiting for it).
    retry_after: float = 1.0


def _json(value: Any) -> bytes:
    return jsonrpc.dumps(value)


def _headers_out(headers: list[tuple[bytes, bytes]]) -> bytes:
    return _json([[k.decode("latin-1"), v.decode("latin-1")] for k, v in headers])


def _headers_in(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in jsonrpc.loads(data)]


def _stopped_error(rid: Any) -> bytes:
    return jsonrpc.dumps({"jsonrpc": "2.0", "id": rid,
                          "error": {"code": INTERNAL_ERROR, "message": WORKER_STOPPED_MESSAGE}})


class Cluster:
    """This worker's membership in a scale-out deployment (see the module docstring).

    The HTTP app calls its hooks (``route``, ``registered``, ``opened``, ``note``,
    ``retire``, ``ended``) and runs :meth:`run` in its nursery.
    """

    def __init__(
        self, state: SharedState, options: ClusterOptions | None = None, *,
        signer: StateSigner | None = None, worker_id: str | None = None,
    ) -> None:
        self.state = state
        self.options = options or ClusterOptions()
        #: Every append to a log (event logs, inboxes) goes through it: batched.
        self.appends = GroupCommit(state)
        #: Signs state that clients carry from worker to worker (``--state-key``).
        self.signer = signer
        #: This worker's name in the store, in logs and in other workers' messages:
        #: ``<host>-<pid>-<random>`` (a restarted worker is a new one). The host and
        #: pid lead to its traces (their header says ``pid``).
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.app: McpHttpApp | None = None
        self._waiting: dict[str, trio.MemorySendChannel[tuple[bytes, dict[str, bytes]]]] = {}
        self._serving: dict[str, trio.Event] = {}
        self._snapshots: dict[str, dict[str, Any]] = {}
        self._retired: set[str] = set()
        self._lost: set[str] = set()
        self._locks: dict[str, trio.Lock] = {}
        self._down_until = -math.inf
        #: Store failures seen so far: a relay waiting across one may have lost pieces.
        self._store_failures = 0
        self._nursery: trio.Nursery | None = None

    # -- keys -------------------------------------------------------------------------

    def _key(self, kind: str, name: str) -> str:
        return f"{self.options.prefix}{kind}:{name}"

    # -- the store, with a short memory of its failures ---------------------------------

    def _available(self) -> bool:
        return trio.current_time() >= self._down_until

    def _failed(self, exc: SharedStateError) -> None:
        self._store_failures += 1
        if self._available():
            log.warning("shared state unavailable: %s (retrying in %.1fs)", exc,
                        self.options.retry_after)
        self._down_until = trio.current_time() + self.options.retry_after

    async def _do(self, op: Callable[[], Awaitable[Any]]) -> Any:
        if not self._available():
            raise SharedStateError(f"{self.state.name} is unavailable (it failed less than "
                                   f"{self.options.retry_after:.0f}s ago)")
        try:
            return await op()
        except SharedStateError as exc:
            self._failed(exc)
            raise

    async def _unavailable(self, send: Send, exc: SharedStateError) -> None:
        await asgi.send_error(send, HttpError(
            503, f"Service Unavailable: the shared session store failed ({exc}); retry "
            "shortly"), [(b"retry-after", b"1")])

    # -- lifetime ---------------------------------------------------------------------

    async def run(
        self, app: McpHttpApp, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Heartbeat, inbox, broadcast and key refresh, until cancelled."""
        self.app = app
        app.endpoint.set_fanout(self.fanout)
        runtime = app.endpoint.task_runtime
        local_tasks = runtime.store
        tasks = install_shared_tasks(self, runtime)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if tasks is not None:
                    relay = TaskRelay(self, tasks, runtime)
                    runtime.peers = relay
                    nursery.start_soon(relay.run)
                nursery.start_soon(self.appends.run)
                nursery.start_soon(self._heartbeat)
                nursery.start_soon(self._read_inbox)
                nursery.start_soon(self._listen_broadcasts)
                nursery.start_soon(self._refresh_sessions)
                task_status.started()
                await trio.sleep_forever()
        finally:
            app.endpoint.set_fanout(None)
            runtime.store = local_tasks
            runtime.peers = None
            self._nursery = None
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                try:
                    await self.state.delete(self._key("w", self.id))
                except SharedStateError:
                    pass

    async def _heartbeat(self) -> None:
        o = self.options
        failed = False
        while True:
            try:
                await self.state.set(self._key("w", self.id), b"1", ttl=o.worker_ttl)
            except SharedStateError as exc:
                self._failed(exc)
                failed = True
            else:
                if failed:
                    # The store is back. Another worker may have counted this one
                    # stopped and taken sessions over; or the store lost its data (a
                    # restart without persistence): say again what this worker owns.
                    failed = not await self._check_ownership()
                    self._down_until = -math.inf
            await trio.sleep(o.heartbeat)

    async def _check_ownership(self) -> bool:
        """Close the local copies of sessions another worker took over, register again
        those the store forgot; False if the store failed meanwhile."""
        assert self.app is not None
        mine = self.id.encode()
        for sid, hs in list(self.app.sessions.items()):
            try:
                owner = await self.state.get(self._key("o", sid))
                if owner is None:
                    snap = self._snapshots.get(sid)
                    if snap is not None:
                        await self.state.set(self._key("s", sid), _json(snap),
                                             ttl=self.options.session_ttl)
                    await self.state.set(self._key("o", sid), mine,
                                         ttl=self.options.session_ttl, only_if_absent=True)
                    continue
            except SharedStateError:
                return False
            if owner != mine and hs.session is not None:
                log.warning("session %s was taken over by worker %r while this worker "
                            "could not reach %s: closing its copy here", sid,
                            (owner or b"").decode(), self.state.name)
                self._lost.add(sid)
                self.app.sessions.pop(sid, None)
                hs.session.close("taken over by another worker")
        log.info("shared state at %s reachable again", self.state.name)
        return True

    async def _refresh_sessions(self) -> None:
        o = self.options
        period = min(o.session_ttl / 3, 60.0)
        since = trio.current_time()
        while True:
            await trio.sleep(period)
            assert self.app is not None
            now = trio.current_time()
            for sid, hs in list(self.app.sessions.items()):
                if hs.last_activity < since and hs.active_requests == 0:
                    continue
                try:
                    for kind in ("o", "s", "e"):
                        await self.state.touch(self._key(kind, sid), o.session_ttl)
                except SharedStateError as exc:
                    self._failed(exc)
                    break
            since = now

    # -- sessions this worker owns ------------------------------------------------------

    async def registered(self, hs: HttpSession, body: bytes, send: Send) -> bool:
        """A session was initialized here: record it (owner, snapshot) before its client
        learns its id. False (503 sent, the session closed) if the store failed."""
        o = self.options
        try:
            params = jsonrpc.loads(body).get("params") or {}
        except (ValueError, AttributeError):
            params = {}
        snap: dict[str, Any] = {"init": params, "ready": False, "level": None, "subs": []}
        try:
            await self._do(lambda: self.state.set(self._key("s", hs.id), _json(snap),
                                                  ttl=o.session_ttl))
            await self._do(lambda: self.state.set(self._key("o", hs.id), self.id.encode(),
                                                  ttl=o.session_ttl))
        except SharedStateError as exc:
            if hs.session is not None:
                hs.session.close("shared state unavailable")
            await self._unavailable(send, exc)
            return False
        self._snapshots[hs.id] = snap
        hs.transport.mirror = self._persist
        return True

    async def opened(self, hs: HttpSession, stream: Stream, ids: list[Any], send: Send) -> bool:
        """A POST opened ``stream`` for ``ids``: logged before the requests run. False
        (503 sent, the stream abandoned) if the store failed."""
        try:
            await self._do(lambda: self.appends.append(
                self._key("e", hs.id), {"k": b"o", "n": b"%d" % stream.no, "i": _json(ids)},
                max_len=self.options.max_log, ttl=self.options.session_ttl))
        except SharedStateError as exc:
            hs.abandon(stream)
            await self._unavailable(send, exc)
            return False
        return True

    async def _persist(self, hs: HttpSession, messages: list[Outgoing]) -> None:
        """Log where each outbound message goes, before it goes there."""
        entries: list[dict[str, bytes]] = []
        seqs: dict[int, int] = {}
        for data, related in messages:
            dest, stream, ids = hs.target(data, related)
            if dest is None:
                continue
            seq = seqs.get(dest.no, dest.last_seq) + 1
            seqs[dest.no] = seq
            entry = {"k": b"e", "n": b"%d" % dest.no, "q": b"%d" % seq, "d": data}
            if ids and stream is not None:
                entry["a"] = _json([stream.no, ids])
            entries.append(entry)
        key = self._key("e", hs.id)
        o = self.options
        try:
            await self._do(lambda: self.appends.append_all(
                [(key, entry, o.max_log, o.session_ttl) for entry in entries]))
        except SharedStateError:
            # The message still goes out: refusing it would break the session over a
            # store outage. Only a takeover during the outage can miss it.
            pass

    async def note(self, hs: HttpSession, items: list[Any]) -> None:
        """Keep the snapshot up to date with what a takeover must replay."""
        snap = self._snapshots.get(hs.id)
        if snap is None:
            return
        changed = False
        for m in items:
            method = getattr(m, "method", None)
            if method is None:
                continue
            params = getattr(m, "params", None) or {}
            if method == "notifications/initialized" and not snap["ready"]:
                snap["ready"] = changed = True
            elif method == "logging/setLevel":
                snap["level"] = params
                changed = True
            elif method == "resources/subscribe" and params.get("uri") not in snap["subs"]:
                snap["subs"].append(params.get("uri"))
                changed = True
            elif method == "resources/unsubscribe" and params.get("uri") in snap["subs"]:
                snap["subs"].remove(params.get("uri"))
                changed = True
        if changed:
            try:
                await self._do(lambda: self.state.set(self._key("s", hs.id), _json(snap),
                                                      ttl=self.options.session_ttl))
            except SharedStateError:
                pass  # a takeover during the outage replays the older snapshot

    def retire(self, sid: str) -> None:
        """The session is over for good (deleted, idle): its keys go when it ends."""
        self._retired.add(sid)

    async def ended(self, hs: HttpSession) -> None:
        """A session of this worker ended: forget it everywhere (retired), or leave it
        to be taken over at once by the next worker it reaches (a shutdown)."""
        sid = hs.id
        self._snapshots.pop(sid, None)
        if sid in self._lost:
            self._lost.discard(sid)
            return
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                if sid in self._retired:
                    self._retired.discard(sid)
                    await self.state.delete(*(self._key(k, sid) for k in ("o", "s", "e")))
                else:
                    await self.state.compare_and_set(self._key("o", sid), self.id.encode(), b"",
                                                     ttl=self.options.session_ttl)
            except SharedStateError as exc:
                log.warning("session %s: could not update the shared store at its end: %s",
                            sid, exc)

    # -- requests for sessions of other workers ----------------------------------------

    async def _alive(self, worker: bytes | None) -> bool:
        if not worker:
            return False
        if worker == self.id.encode():
            return True
        return await self._do(lambda: self.state.get(self._key("w", worker.decode()))) is not None

    async def route(self, sid: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """A request for a session this worker does not hold. True when it was answered
        here (relayed to its owner, or refused); False to go on locally (the session was
        taken over, or is unknown: the local path answers 404)."""
        for _ in range(3):
            try:
                owner = await self._do(lambda: self.state.get(self._key("o", sid)))
                if owner is None:
                    return False
                alive = owner != self.id.encode() and await self._alive(owner)
            except SharedStateError as exc:
                await self._unavailable(send, exc)
                return True
            if alive:
                return await self._relay(owner, sid, scope, receive, send)
            try:
                if await self.take_over(sid, owner):
                    return False
            except SharedStateError as exc:
                await self._unavailable(send, exc)
                return True
        await asgi.send_error(send, HttpError(503, "Service Unavailable: the session is "
                                              "changing workers; retry"), [(b"retry-after", b"1")])
        return True

    async def _relay(
        self, owner: bytes, sid: str, scope: Scope, receive: Receive, send: Send
    ) -> bool:
        assert self.app is not None
        headers = Headers(scope.get("headers", []))
        try:
            body = await asgi.read_body(receive, self.app.options.max_body_size,
                                        headers.get("content-length"))
        except asgi.BodyTooLarge:
            await asgi.send_error(send, HttpError(413, "Payload Too Large"))
            return True
        token = secrets.token_hex(8)
        inbox = self._key("q", owner.decode())
        # Whether the owner took the request: it says so before it runs anything, so a
        # request it never took is safe to run elsewhere if it stops.
        taken = False
        tx, rx = trio.open_memory_channel[tuple[bytes, dict[str, bytes]]](10_000)
        self._waiting[token] = tx
        started = False
        try:
            try:
                await self._do(lambda: self.appends.append(inbox, {
                    "k": b"r", "t": token.encode(), "f": self.id.encode(),
                    "me": str(scope.get("method", "GET")).encode(),
                    "pa": str(scope.get("path", "")).encode(),
                    "qs": bytes(scope.get("query_string", b"")),
                    "h": _headers_out(list(scope.get("headers", []))), "d": body,
                }, max_len=self.options.max_inbox, ttl=self.options.inbox_ttl))
            except SharedStateError as exc:
                await self._unavailable(send, exc)
                return True
            outcome = "owner-stopped"
            failures = self._store_failures
            with trio.CancelScope() as left:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(asgi.watch_disconnect, receive, left)
                    while True:
                        with trio.move_on_after(self.options.worker_ttl) as quiet:
                            kind, fields = await rx.receive()
                        if quiet.cancelled_caught:
                            if self._store_failures != failures:
                                # The store failed meanwhile: pieces of the answer
                                # (or the request itself) may be lost with it.
                                outcome = "store-failed"
                                break
                            try:
                                if await self._alive(owner):
                                    continue
                            except SharedStateError:
                                continue
                            break
                        if kind == b"a":
                            taken = True
                        elif kind == b"s":
                            await send({"type": "http.response.start",
                                        "status": int(fields["st"]),
                                        "headers": _headers_in(fields["h"])})
                            started = True
                        elif kind == b"b":
                            more = fields.get("m") == b"1"
                            await send({"type": "http.response.body", "body": fields["d"],
                                        "more_body": more})
                            if not more:
                                outcome = "done"
                                break
                        elif kind == b"x":
                            break
                    nursery.cancel_scope.cancel()
            if left.cancelled_caught:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await self.appends.append(inbox, {"k": b"g", "t": token.encode()},
                                                max_len=self.options.max_inbox,
                                                ttl=self.options.inbox_ttl)
                    except SharedStateError:
                        pass
                return True
            if outcome == "done" or started:
                # Started and cut off: the connection closes with the response
                # incomplete, and the client resumes from its last event id.
                return True
            if outcome == "store-failed":
                await asgi.send_error(send, HttpError(
                    503, "Service Unavailable: the shared session store failed while this "
                    "request was relayed to its session's worker"
                    + ("; its outcome is unknown (retry it if that is safe)" if taken
                       else "; it was not run: retry it"), INTERNAL_ERROR),
                    [(b"retry-after", b"1")])
                return True
            return await self._owner_stopped(owner, sid, scope, body, receive, send, taken)
        finally:
            del self._waiting[token]

    async def _owner_stopped(
        self, owner: bytes, sid: str, scope: Scope, body: bytes, receive: Receive, send: Send,
        taken: bool,
    ) -> bool:
        """The owner stopped before it began to answer a relayed request (``taken``: it
        had said it took the request)."""
        assert self.app is not None
        if taken and scope.get("method") == "POST" and _carries_requests(body):
            # It may have begun running them: never run them twice. (One it never took
            # is served here, after the takeover, like any other.)
            await asgi.send_error(send, HttpError(503, "Service Unavailable: "
                                                  + WORKER_STOPPED_MESSAGE, INTERNAL_ERROR),
                                  [(b"retry-after", b"1")])
            return True
        try:
            # Taken over here, or by another worker first (then the request is served
            # below by routing it again: relayed to that worker).
            await self.take_over(sid, owner)
        except SharedStateError as exc:
            await self._unavailable(send, exc)
            return True
        sent = False

        async def again() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, again, send)
        return True

    # -- this worker as the owner of relayed requests -----------------------------------

    async def _read_inbox(self) -> None:
        inbox = self._key("q", self.id)
        after = "0"
        failures = 0
        while True:
            try:
                entries = await self.state.read_new(inbox, after, timeout=5.0)
            except SharedStateError as exc:
                self._failed(exc)
                failures += 1
                await trio.sleep(min(0.1 * 2 ** min(failures, 5), 2.0))
                continue
            failures = 0
            for entry_id, fields in entries:
                after = entry_id
                self._dispatch(fields)

    def _dispatch(self, fields: dict[str, bytes]) -> None:
        kind = fields.get("k")
        token = fields.get("t", b"").decode()
        if kind == b"r":
            assert self._nursery is not None
            self._nursery.start_soon(self._serve_relayed, token, fields)
        elif kind == b"g":
            gone = self._serving.get(token)
            if gone is not None:
                gone.set()
        else:
            waiter = self._waiting.get(token)
            if waiter is not None:
                try:
                    waiter.send_nowait((kind or b"", fields))
                except trio.WouldBlock:
                    # The client reads slower than the owner writes, past the buffer:
                    # cut the response off (the client resumes from its last event id).
                    self._waiting.pop(token, None)
                    waiter.close()

    async def _serve_relayed(self, token: str, fields: dict[str, bytes]) -> None:
        assert self.app is not None
        reply_to = fields["f"].decode()
        inbox = self._key("q", reply_to)
        gone = trio.Event()
        self._serving[token] = gone
        body = fields.get("d", b"")
        scope: Scope = {
            "type": "http", "http_version": "1.1", "scheme": "http",
            "method": fields["me"].decode(), "path": fields["pa"].decode(),
            "raw_path": fields["pa"], "query_string": fields.get("qs", b""),
            "headers": _headers_in(fields["h"]), "client": None, "server": None,
        }
        read = False
        finished = False
        try:
            # Said before anything runs: a request not taken is run elsewhere if this
            # worker stops, one taken never is (its outcome is unknown).
            await self.appends.append(inbox, {"k": b"a", "t": token.encode()},
                                    max_len=self.options.max_inbox, ttl=self.options.inbox_ttl)
        except SharedStateError as exc:
            self._failed(exc)
            self._serving.pop(token, None)
            return

        async def receive() -> dict[str, Any]:
            nonlocal read
            if not read:
                read = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        head: list[dict[str, bytes]] = []

        async def send(message: dict[str, Any]) -> None:
            nonlocal finished
            if gone.is_set():
                raise trio.BrokenResourceError("the relaying worker's client left")
            if message["type"] == "http.response.start":
                # Held until the first body chunk, and sent with it in one write (as
                # the HTTP server holds a head: a JSON answer is one write).
                head.append({"k": b"s", "t": token.encode(), "st": b"%d" % message["status"],
                             "h": _headers_out(list(message.get("headers", [])))})
                return
            more = bool(message.get("more_body", False))
            out = [*head, {"k": b"b", "t": token.encode(), "d": bytes(message.get("body", b"")),
                           "m": b"1" if more else b"0"}]
            head.clear()
            finished = not more
            o = self.options
            try:
                await self.appends.append_all([(inbox, e, o.max_inbox, o.inbox_ttl) for e in out])
            except SharedStateError as exc:
                self._failed(exc)
                gone.set()
                raise trio.BrokenResourceError(str(exc)) from None

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_peer, reply_to, gone)
                await self.app(scope, receive, send)  # type: ignore[arg-type]
                nursery.cancel_scope.cancel()
        finally:
            self._serving.pop(token, None)
            if not finished and not gone.is_set():
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await self.appends.append(inbox, {"k": b"x", "t": token.encode()},
                                                max_len=self.options.max_inbox,
                                                ttl=self.options.inbox_ttl)
                    except SharedStateError:
                        pass

    async def _watch_peer(self, worker: str, gone: trio.Event) -> None:
        """End a relayed response whose relaying worker stopped (its client is gone)."""
        while not gone.is_set():
            await trio.sleep(self.options.worker_ttl)
            try:
                if not await self._alive(worker.encode()):
                    gone.set()
            except SharedStateError:
                pass

    # -- taking a session over ----------------------------------------------------------

    async def take_over(self, sid: str, previous: bytes) -> bool:
        """Become the owner of ``sid`` (whose owner ``previous`` stopped) and rebuild it
        here. False when another worker took it first."""
        assert self.app is not None
        lock = self._locks.setdefault(sid, trio.Lock())
        try:
            async with lock:
                if sid in self.app.sessions:
                    return True
                mine = self.id.encode()
                if not await self._do(lambda: self.state.compare_and_set(
                        self._key("o", sid), previous, mine, ttl=self.options.session_ttl)):
                    return await self._do(lambda: self.state.get(self._key("o", sid))) == mine \
                        and sid in self.app.sessions
                raw = await self._do(lambda: self.state.get(self._key("s", sid)))
                if raw is None:
                    await self.state.delete(self._key("o", sid))
                    return True  # nothing to rebuild: the local path answers 404
                entries = await self._do(lambda: self.state.read_range(self._key("e", sid)))
                await self._rebuild(sid, jsonrpc.loads(raw), entries)
                log.info("session %s taken over from worker %r", sid, previous.decode())
                return True
        finally:
            if not lock.statistics().tasks_waiting:
                self._locks.pop(sid, None)

    async def _rebuild(self, sid: str, snap: dict[str, Any], entries: list[Entry]) -> None:
        app = self.app
        assert app is not None
        replay: list[bytes] = [jsonrpc.encode_request(_TAKEOVER + "init", "initialize",
                                                      snap.get("init") or {})]
        if snap.get("ready"):
            replay.append(jsonrpc.encode_notification("notifications/initialized", None))
        if snap.get("level"):
            replay.append(jsonrpc.encode_request(_TAKEOVER + "level", "logging/setLevel",
                                                 snap["level"]))
        for n, uri in enumerate(snap.get("subs") or ()):
            replay.append(jsonrpc.encode_request(f"{_TAKEOVER}sub-{n}", "resources/subscribe",
                                                 {"uri": uri}))
        drop = frozenset({_TAKEOVER + "init", _TAKEOVER + "level"}
                         | {f"{_TAKEOVER}sub-{n}" for n in range(len(snap.get("subs") or ()))})
        hs = await app.start_session(app.response_mode, drop_ids=drop, session_id=sid)
        for message in replay:
            await hs.transport.deliver(message)
        restore_streams(hs, entries)
        hs.transport.mirror = self._persist
        self._snapshots[sid] = snap
        app.sessions[sid] = hs
        hs.touch()
        # Requests the old owner had accepted and not answered will never be answered:
        # say so on their streams (logged too, for a later takeover).
        for rid in list(hs.request_streams):
            await hs.transport.send([(_stopped_error(rid), rid)])

    # -- notifications to every worker's sessions ---------------------------------------

    async def fanout(self, method: str, params: Any) -> None:
        """``Server``'s broadcast: to every worker (this one included) through the store;
        to this worker's sessions only when the store failed."""
        assert self.app is not None
        try:
            await self._do(lambda: self.state.publish(
                self._key("bc", "all"), _json({"m": method, "p": params})))
        except SharedStateError as exc:
            log.warning("%s reached this worker's sessions only: %s", method, exc)
            await self.app.endpoint.deliver_broadcast(method, params)

    async def _listen_broadcasts(self) -> None:
        failures = 0
        while True:
            try:
                async with self.state.subscribe(self._key("bc", "all")) as messages:
                    failures = 0
                    async for data in messages:
                        message = jsonrpc.loads(data)
                        assert self.app is not None
                        await self.app.endpoint.deliver_broadcast(message["m"], message.get("p"))
            except SharedStateError as exc:
                self._failed(exc)
            failures += 1
            await trio.sleep(min(0.1 * 2 ** min(failures, 5), 2.0))


def restore_streams(hs: HttpSession, entries: list[Entry]) -> None:
    """Rebuild a session's streams from its event log (see :class:`Cluster`)."""
    store = hs.store
    for _, fields in entries:
        no = int(fields.get("n", b"0"))
        stream = store.streams.get(no)
        if stream is None:
            stream = store.new_stream(no=no)
        kind = fields.get("k")
        if kind == b"o":
            for rid in jsonrpc.loads(fields["i"]):
                stream.pending.add(rid)
                hs.request_streams[rid] = stream
        elif kind == b"e":
            seq = int(fields["q"])
            if seq <= stream.last_seq:
                continue  # logged twice (a retried write): once is enough
            stream.last_seq = seq - 1  # earlier entries may have been trimmed
            stream.append(fields["d"])
            if "a" in fields:
                answered_no, ids = jsonrpc.loads(fields["a"])
                answered = store.streams.get(answered_no)
                if answered is not None:
                    for rid in ids:
                        if hs.request_streams.get(rid) is answered:
                            del hs.request_streams[rid]
                    answered.answered(ids)
    for stream in store.streams.values():
        # A GET without Last-Event-ID starts with what comes next: whether the old owner
        # had delivered the rest is not known, and sending it twice is worse.
        stream.delivered = stream.last_seq


def _carries_requests(body: bytes) -> bool:
    try:
        parsed = jsonrpc.loads(body)
    except ValueError:
        return False
    items = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(m, dict) and "method" in m and "id" in m for m in items)


@asynccontextmanager
async def open_cluster(
    redis: str | SharedState, *, options: ClusterOptions | None = None,
    state_key: str | None = None,
) -> AsyncIterator[Cluster]:
    """A :class:`Cluster` on ``redis`` (a ``redis://`` URL, or any :class:`SharedState`)
    for the block."""
    signer = StateSigner(state_key) if state_key else None
    if isinstance(redis, str):
        from mcpactor.scaleout.redis_state import open_redis_state

        async with open_redis_state(redis) as state:
            yield Cluster(state, options, signer=signer)
    else:
        yield Cluster(redis, options, signer=signer)
