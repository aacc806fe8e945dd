"""Replaying one side of a trace against a live peer.

Either side of a server trace or a client trace: :func:`sides` says which events are
whose. ``replay_against``: the recorded client side is sent to a live server (a command
spawned over stdio, or a Streamable HTTP URL), each input once the live server has
sent as many messages as the recording had before it; the server's answers are then
compared with the recorded ones.

``serve_trace``: the recorded server side is played to a real client over this
process's stdio — a scripted stand-in server for client tests. Each recorded output
is sent once the client has sent what the recording had before it, with the recorded
delay after that input.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from contextlib import AsyncExitStack
from typing import Any, TextIO

import trio

from mcpactor.tracing.encode import dumps, input_bytes, loads
from mcpactor.transports.base import Transport

from .render import describe_message
from .trace import Event, Trace


def _is_msg(ev: Event, kind: str) -> bool:
    return ev.kind == kind and ("msg" in ev.data or "raw" in ev.data)


def sides(trace: Trace) -> tuple[str, str]:
    """The event kinds of (the client's messages, the server's messages) in ``trace``:
    a server records what the client sent as ``message_in``, a client as ``message_out``."""
    if trace.role == "client":
        return "message_out", "message_in"
    return "message_in", "message_out"


def _payload(ev: Event) -> bytes:
    return input_bytes(ev.data)


_USAGE = ("--against takes a command line that starts an MCP server over stdio, e.g. "
          "'python server.py', or an http(s):// or ws(s):// URL")


def is_url(target: str) -> bool:
    """Whether ``--against`` names a URL (else: a command line)."""
    return target.startswith(("http://", "https://", "ws://", "wss://"))


class _Stderr:
    """The last lines a target process wrote to stderr (its own last words, for the one
    line that says why it stopped; the rest is not echoed: the report is ours)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def drain(self, stream: Any) -> None:
        buf = b""
        try:
            while True:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                buf = (buf + chunk)[-8192:]
        except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
            pass
        self.lines = [ln.strip() for ln in buf.decode("utf-8", "replace").splitlines()
                      if ln.strip()][-5:]

    def last(self) -> str:
        return self.lines[-1] if self.lines else ""


async def _open(target: str, nursery: trio.Nursery, stack: AsyncExitStack,
                env: dict[str, str] | None, stderr: _Stderr) -> Transport:
    if target.startswith(("ws://", "wss://")):
        from mcpactor.transports.websocket import open_websocket_transport

        try:
            return await stack.enter_async_context(open_websocket_transport(target))
        except Exception as exc:
            raise TargetError(f"cannot reach {target}: {_why(exc)}") from None
    if target.startswith(("http://", "https://")):
        from mcpactor.transports.streamable_client import StreamableHttpClientTransport

        return StreamableHttpClientTransport(target, nursery, legacy_fallback=False,
                                             open_get_stream=True)
    import subprocess

    from mcpactor.transports.stdio import StdioClientTransport

    argv = shlex.split(target)
    if not argv:
        raise TargetError(f"--against needs a command or a URL, not {target!r} ({_USAGE})")
    try:
        # Generous shutdown: a server may drain in-flight work after end of input, and
        # killing it early would cut its own trace short.
        transport = await StdioClientTransport.spawn(argv, shutdown_timeout=10.0, env=env,
                                                     stderr=subprocess.PIPE)
    except OSError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        raise TargetError(f"cannot start {target}: {cause.strerror or cause} ({_USAGE})"
                          ) from None
    if transport.process.stderr is not None:
        nursery.start_soon(stderr.drain, transport.process.stderr)
    return transport


def _why(exc: BaseException) -> str:
    """The cause of a failure in a few words (the OSError under a library's own)."""
    seen = exc
    while not (isinstance(seen, OSError) or str(seen)) and (
            seen.__cause__ or seen.__context__) is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    if isinstance(seen, OSError) and seen.strerror:
        return seen.strerror
    text = str(seen) or type(seen).__name__
    return text.splitlines()[0]


class TargetError(Exception):
    """The live server could not be driven: it did not start, died, or never answered."""


#: What the HTTP client answers itself when it could not reach the server at all.
_UNREACHABLE = ("HTTP request failed",)
#: What it answers when the server's HTTP status was not an MCP answer (a 404 page).
_NOT_MCP = re.compile(r"HTTP \d{3} from the server")


def _is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "id" in msg and "method" not in msg and (
        "result" in msg or "error" in msg)


def _local_failure(msg: Any, *, first: bool) -> str | None:
    """The message of an error the HTTP client transport made up because the server
    could not be reached (at any time: it is gone), or, as the first answer, because
    what answered at the URL is not an MCP endpoint (an HTTP error status)."""
    if not _is_response(msg) or not isinstance(msg.get("error"), dict):
        return None
    text = msg["error"].get("message")
    if msg["error"].get("code") != -32000 or not isinstance(text, str):
        return None
    if text.startswith(_UNREACHABLE) or (first and _NOT_MCP.match(text)):
        return text
    return None


class _Order:
    """The recorded order across the sessions of a trace, kept live.

    Each session runs on a connection (a process) of its own, so its inputs could
    overtake what other sessions did before them in the recording: a second session's
    read could reach the server before the first one's write. An input of one session
    therefore waits until every other session's input recorded before it has been sent
    and every answer recorded before it has come (or that session has ended or stopped
    waiting itself): the sessions' steps reach the server in their recorded order."""

    def __init__(self, trace: Trace) -> None:
        client_kind, server_kind = sides(trace)
        #: The events (by index) still to happen, and their sessions.
        self.pending: dict[int, str | None] = {}
        #: A recorded answer's event, by (session, request id JSON).
        self.answers: dict[tuple[str | None, str], int] = {}
        for ev in trace.events:
            if _is_msg(ev, client_kind):
                self.pending[ev.index] = ev.session
            elif _is_msg(ev, server_kind):
                for m in _messages(ev):
                    if _is_response(m):
                        self.pending[ev.index] = ev.session
                        self.answers.setdefault((ev.session, dumps(m["id"]).decode()),
                                                ev.index)
        self.order = sorted(self.pending)
        self._front = 0
        #: Sessions no one waits for any more (ended, or no longer answered).
        self.finished: set[str | None] = set()
        self._changed = trio.Event()

    def _tick(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def sent(self, index: int) -> None:
        """The recorded input ``index`` went to the target."""
        if index in self.pending:
            del self.pending[index]
            self._tick()

    def answered(self, sid: str | None, key: str) -> None:
        """The target answered request ``key`` of session ``sid``."""
        index = self.answers.get((sid, key))
        if index is not None and index in self.pending:
            del self.pending[index]
            self._tick()

    def finish(self, sid: str | None) -> None:
        """Session ``sid`` is over, or stopped waiting: nothing waits for it."""
        if sid not in self.finished:
            self.finished.add(sid)
            self._tick()

    def _blocked(self, sid: str | None, index: int) -> bool:
        while self._front < len(self.order) and self.order[self._front] not in self.pending:
            self._front += 1
        for i in self.order[self._front:]:
            if i >= index:
                return False
            if i in self.pending:
                owner = self.pending[i]
                if owner != sid and owner not in self.finished:
                    return True
        return False

    async def wait(self, sid: str | None, index: int, timeout: float) -> tuple[bool, bool]:
        """Wait until what other sessions did before event ``index`` has happened:
        (whether it has, whether that took a wait)."""
        waited = False
        with trio.move_on_after(timeout):
            while self._blocked(sid, index):
                waited = True
                await self._changed.wait()
            return True, waited
        return False, waited


class _Session:
    """What one recorded session's replay to the target needs to know as it goes."""

    def __init__(self, sid: str | None, recorded: dict[str, Any]) -> None:
        self.sid = sid
        #: Recorded responses by id (JSON), to learn what the live server answered instead.
        self.recorded = recorded
        #: Recorded values of earlier answers -> the live server's (see :func:`_adapt`).
        self.renamed: dict[str, str] = {}
        self.sent: set[str] = set()
        self.answered: set[str] = set()


async def _drive(trace: Trace, sid: str | None, events: list[Event], target: str,
                 timeout: float, got: list[tuple[str | None, Any]],
                 env: dict[str, str] | None, ack: str | None = None,
                 order: _Order | None = None) -> None:
    """Play one recorded session's client side to ``target``, collecting its answers
    (each input in the recorded order across sessions, ``order``)."""
    received: list[Any] = []
    #: What the target wrote that is not a JSON-RPC message (a stray print).
    stray: list[bytes] = []
    arrived = trio.Condition()
    ended = trio.Event()
    stderr = _Stderr()
    client_kind, server_kind = sides(trace)
    state = _Session(sid, {dumps(m["id"]).decode(): m for ev in events
                           if _is_msg(ev, server_kind)
                           for m in _messages(ev) if _is_response(m)})
    async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
        transport = await _open(target, nursery, stack, env, stderr)
        # A target given up on is not waited for (its shutdown grace is for a target
        # that answered).
        stack.callback(_kill, transport)

        async def reader() -> None:
            try:
                while True:
                    data = await transport.receive()
                    if isinstance(data, bytes):
                        try:
                            msg = loads(data)
                        except ValueError:
                            msg = data.decode("utf-8", "replace")
                        if not _is_jsonrpc(msg):
                            # Not an answer, nor anything the recording could have had:
                            # said as such if the target never answers.
                            stray.append(data)
                            continue
                        for m in msg if isinstance(msg, list) else [msg]:
                            failure = _local_failure(m, first=not state.answered)
                            if failure is not None and is_url(target):
                                raise TargetError(_unusable(target, failure))
                            if _is_response(m):
                                key = dumps(m["id"]).decode()
                                state.answered.add(key)
                                _learn(state, key, m)
                                if order is not None:
                                    order.answered(sid, key)
                        received.append(msg)
                        got.append((sid, msg))
                        async with arrived:
                            arrived.notify_all()
            except TargetError:
                raise
            except Exception:
                pass
            finally:
                ended.set()
                async with arrived:
                    arrived.notify_all()

        async def wait_for(done: Any) -> bool:
            with trio.move_on_after(timeout):
                async with arrived:
                    while not done() and not ended.is_set():
                        await arrived.wait()
            return bool(done())

        async def acked(path: str) -> bool:
            due = state.sent & state.recorded.keys()
            with trio.move_on_after(timeout):
                while not await trio.Path(path).exists():
                    if ended.is_set() or due <= state.answered:
                        return False
                    await trio.sleep(0.02)
                return True
            return False

        nursery.start_soon(reader)
        outs_before = 0
        started = trio.current_time()
        first_t: float | None = None
        sent = 0
        # A target that follows the recording (it said so in ``ack``) takes each input at
        # its recorded step whenever it arrives: the rest goes without waiting for
        # answers or for the recorded pacing (waiting could hold up changed code whose
        # answers come later than recorded).
        following = False
        stuck = False
        gated = order is not None
        for ev in events:
            if _is_msg(ev, server_kind):
                outs_before += 1
                continue
            if not (_is_msg(ev, client_kind)
                    or (ev.kind == "transport_closed" and trace.role == "server")):
                continue
            if not following and not stuck:
                count = outs_before
                if not await wait_for(lambda count=count: len(received) >= count):
                    if state.sent and not state.answered and not ended.is_set():
                        raise TargetError(_silent(target, timeout, stray))
                    # It answers no more: the rest goes without waiting, once.
                    stuck = True
                    if order is not None:
                        order.finish(sid)
                following = ack is not None and await trio.Path(ack).exists()
            if ended.is_set() and ev.kind != "transport_closed":
                raise TargetError(await _gone(target, transport, stderr, received, sent, stray))
            if not following:
                first_t = ev.t if first_t is None else first_t
                if gated and order is not None and ev.kind != "transport_closed":
                    # What the other sessions did before this input, first.
                    gated, waited = await order.wait(sid, ev.index, timeout)
                    late = trio.current_time() - (started + (ev.t - first_t))
                    if waited and late > 0:
                        # Held up by them: the recorded spacing counts from now.
                        started += late
                # Keep the recorded pacing between inputs (timers, late cancellations).
                await trio.sleep_until(started + (ev.t - first_t))
            if ev.kind == "transport_closed":
                if not following and ack is not None:
                    # The recording's input ended here, maybe before answers it sent
                    # after: a target that follows takes the end at this recorded step
                    # and answers only then. It may not have said so yet (still
                    # starting when every input went): wait for it to say so, or for
                    # the answers.
                    following = await acked(ack)
                if following:
                    # The target takes the end of its input at its recorded step, as it
                    # takes every input: it can come now.
                    stdin = getattr(getattr(transport, "process", None), "stdin", None)
                    if stdin is not None:
                        with trio.CancelScope(shield=True):
                            await stdin.aclose()
                break
            payload = _adapt(_payload_of(ev), state)
            for m in payload if isinstance(payload, list) else [payload]:
                if isinstance(m, dict) and "method" in m and "id" in m:
                    state.sent.add(dumps(m["id"]).decode())
            try:
                await transport.send([(_encode(payload), None)])
            except Exception:
                raise TargetError(
                    await _gone(target, transport, stderr, received, sent, stray)) from None
            sent += 1
            if order is not None:
                order.sent(ev.index)
        # Every request sent that the recording has an answer to is answered (or the
        # wait runs out) before the connection closes: closing first would cut the
        # answers short. Then a moment for the messages the recording had after them.
        due = state.sent & state.recorded.keys()
        if await wait_for(lambda: due <= state.answered):
            with trio.move_on_after(min(timeout, 1.0)):
                await wait_for(lambda: len(received) >= outs_before)
        if state.sent and not state.answered:
            if ended.is_set():
                raise TargetError(await _gone(target, transport, stderr, received, sent, stray))
            raise TargetError(_silent(target, timeout, stray))
        with trio.CancelScope(shield=True):
            await transport.aclose()
        nursery.cancel_scope.cancel()


def _silent(target: str, timeout: float, stray: list[bytes]) -> str:
    return (f"{target} never answered: no response came within {timeout:g} s of the "
            f"first request{_strays(stray)} (--timeout sets the wait)")


def _strays(stray: list[bytes]) -> str:
    """What the target wrote that is not JSON-RPC, in a few words (or nothing)."""
    if not stray:
        return ""
    first = stray[0].decode("utf-8", "replace").strip()
    first = first if len(first) <= 60 else first[:57] + "..."
    return (f"; it wrote {len(stray)} line(s) that are not JSON-RPC messages, the first: "
            f"{first!r}")


def _is_jsonrpc(msg: Any) -> bool:
    """Whether a line the target wrote is a JSON-RPC message (or a batch of them)."""
    if isinstance(msg, list):
        return bool(msg) and all(_is_jsonrpc(m) for m in msg)
    return isinstance(msg, dict) and ("method" in msg or _is_response(msg))


def _unusable(target: str, failure: str) -> str:
    """The one line for a URL that cannot be driven: unreachable, or not MCP."""
    if failure.startswith(_UNREACHABLE):
        why = failure[len(_UNREACHABLE[0]):].lstrip(": ")
        return (f"cannot reach {target}: {why or 'the connection failed'} (is the server "
                "running, at that address?)")
    return f"cannot use {target}: {failure}"


def _kill(transport: Any) -> None:
    process = getattr(transport, "process", None)
    if process is not None and process.returncode is None:
        try:
            process.kill()
        except OSError:
            pass


def _messages(ev: Event) -> list[Any]:
    msg = ev.data.get("msg")
    return msg if isinstance(msg, list) else [msg]


def _payload_of(ev: Event) -> Any:
    # A message as its JSON value (to adapt); input that was not JSON as its exact bytes.
    if "msg" in ev.data:
        return ev.data["msg"]
    return input_bytes(ev.data)


def _encode(payload: Any) -> bytes:
    if isinstance(payload, bytes):
        return payload
    return dumps(payload)  # integers past 64 bits exact


#: Strings shorter than this are never taken for references to an earlier answer ("ok").
_MIN_REFERENCE = 8


def _learn(state: _Session, key: str, live: Any) -> None:
    """Note where the live answer to request ``key`` differs from the recorded one in a
    string a later input may quote back (a ``requestState``, a task id, a cursor)."""
    recorded = state.recorded.get(key)
    if recorded is None:
        return

    def walk(a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in a.keys() & b.keys():
                walk(a[k], b[k])
        elif isinstance(a, list) and isinstance(b, list):
            for x, y in zip(a, b, strict=False):
                walk(x, y)
        elif isinstance(a, str) and isinstance(b, str) and a != b \
                and len(a) >= _MIN_REFERENCE:
            state.renamed[a] = b

    walk(recorded, live)


def _adapt(payload: Any, state: _Session) -> Any:
    """``payload`` with every string that quotes an earlier recorded answer replaced by
    what the live server answered there (inputs that refer to earlier answers)."""
    if not state.renamed:
        return payload
    if isinstance(payload, dict):
        return {k: _adapt(v, state) for k, v in payload.items()}
    if isinstance(payload, list):
        return [_adapt(v, state) for v in payload]
    if isinstance(payload, str):
        return state.renamed.get(payload, payload)
    return payload


async def _gone(target: str, transport: Any, stderr: _Stderr, received: list[Any],
                sent: int, stray: list[bytes]) -> str:
    process = getattr(transport, "process", None)
    if process is not None:
        with trio.move_on_after(2.0):
            await process.wait()
        # Its stderr to the end: the last line is usually why it stopped.
        await trio.sleep(0.05)
    status = getattr(process, "returncode", None)
    how = f"exited with status {status}" if status is not None else "closed the connection"
    answers = sum(1 for m in received if _is_response(m))
    said = stderr.last()
    if said:
        return (f"{target} {how} after {answers} answer(s) to {sent} message(s)"
                f"{_strays(stray)}: {said}")
    return (f"{target} {how} after {answers} answer(s) to {sent} message(s)"
            f"{_strays(stray)}; the rest of the recording could not be played to it")


def _follow_env(trace: Trace, sid: str | None, ack: str, timeout: float) -> dict[str, str]:
    """The environment that asks a command target to follow session ``sid`` of
    ``trace`` (see :mod:`replay.livefollow`)."""
    from .livefollow import FOLLOW_ENV

    env = {FOLLOW_ENV: dumps({"trace": os.path.abspath(str(trace.path)), "session": sid,
                              "ack": ack, "wait": timeout}).decode()}
    seed = trace.header.get("hash_seed")
    if isinstance(seed, int):
        env["PYTHONHASHSEED"] = str(seed)
    return env


async def _drive_all(trace: Trace, target: str, timeout: float,
                     folder: str | None) -> list[tuple[str | None, Any]]:
    # One connection (one process, for a command) per recorded session, each started at
    # its recorded time after the first: sessions that ran one after the other live
    # (sharing the server's state) do so again.
    got: list[tuple[str | None, Any]] = []
    by_session: dict[str | None, list[Event]] = {}
    for ev in trace.events:
        by_session.setdefault(ev.session, []).append(ev)
    first = min((evs[0].t for evs in by_session.values() if evs), default=0.0)
    began = trio.current_time()
    # In the recorded order across sessions too (a whole-process trace's sessions share
    # the server's state: a later session may read what an earlier one wrote).
    order = _Order(trace) if len(by_session) > 1 else None

    async def one(sid: str | None, events: list[Event], n: int) -> None:
        try:
            await trio.sleep_until(began + (events[0].t - first))
            ack = None if folder is None else os.path.join(folder, f"{n}.ack")
            env = None if ack is None else _follow_env(trace, sid, ack, timeout)
            await _drive(trace, sid, events, target, timeout, got, env, ack, order)
        finally:
            if order is not None:
                order.finish(sid)

    async with trio.open_nursery() as nursery:
        for n, (sid, events) in enumerate(by_session.items()):
            if events:
                nursery.start_soon(one, sid, events, n)
    return got


def _one_error(group: BaseExceptionGroup[Any]) -> Exception | None:
    """The error to report of those a run ended with: the target's unreachability
    (the reader's, which says why) before what the sender saw of it."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for sub in exc.exceptions:
                walk(sub)
        else:
            leaves.append(exc)

    walk(group)
    errors = [e for e in leaves if isinstance(e, TargetError | OSError)]
    if not errors or len(errors) != len([e for e in leaves
                                         if not isinstance(e, trio.Cancelled)]):
        return None
    errors.sort(key=lambda e: not str(e).startswith("cannot "))
    return errors[0]


def replay_against(trace: Trace, target: str, *, timeout: float, out: TextIO) -> int:
    """Send the recorded client side to ``target``; 0 if every response matches the
    recorded one (by request id: see :mod:`replay.compare`). Raises
    :class:`TargetError` when the target cannot be driven.

    A command target is asked to follow the recording (:mod:`replay.livefollow`); if it
    does (an mcpactor server over stdio), its answers are compared exactly. Otherwise
    (a URL, or a server that is not mcpactor's) the answers that depended on timing or
    entropy in the recording are compared by their form only (:func:`racy_requests`).
    """
    import tempfile

    from .compare import compare, print_comparison, racy_requests, references, server_messages

    if not target.strip():
        raise TargetError(f"--against needs a command or a URL ({_USAGE})")
    with tempfile.TemporaryDirectory(prefix="mcpactor-against-") as folder:
        # A server's recording can be followed by a server (a client's holds the
        # client's schedule, not a server's).
        follow = None if is_url(target) or trace.role != "server" else folder
        try:
            got = trio.run(_drive_all, trace, target, timeout, follow)
        except BaseExceptionGroup as group:
            found = _one_error(group)
            if found is not None:
                raise found from None
            raise
        followed = follow is not None and bool(os.listdir(folder))
    recorded, methods = server_messages(trace)
    loose = frozenset() if followed else racy_requests(trace)
    cmp = compare(recorded, got, methods, loose=loose, references=references(trace))
    how = "following the recording" if followed else (
        f"{len(loose)} racy response(s) compared by form" if loose else "")
    print_comparison(cmp, out, what=f"against {target}" + (f" ({how})" if how else ""))
    return 0 if cmp.same else 1


async def _serve(trace: Trace, timeout: float, err: TextIO) -> int:
    from mcpactor.transports.stdio import StdioServerTransport

    transport = StdioServerTransport()
    received: list[Any] = []
    arrived = trio.Condition()
    mismatches = 0
    client_kind, server_kind = sides(trace)
    inputs = [ev for ev in trace.events if _is_msg(ev, client_kind)]

    async def reader() -> None:
        nonlocal mismatches
        try:
            while True:
                data = await transport.receive()
                if not isinstance(data, bytes):
                    continue
                try:
                    msg = loads(data)
                except ValueError:
                    msg = data.decode("utf-8", "replace")
                i = len(received)
                received.append(msg)
                exp = inputs[i].data.get("msg", inputs[i].data.get("raw")) if i < len(inputs) else None
                if not _same_call(exp, msg):
                    mismatches += 1
                    print(f"replay --serve: input {i + 1} differs from the recording: expected "
                          f"{describe_message(exp)}, got {describe_message(msg)}", file=err)
                async with arrived:
                    arrived.notify_all()
        except (trio.EndOfChannel, Exception):
            async with arrived:
                arrived.notify_all()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        ins_before = 0
        gate_time = trio.current_time()
        last_in_t = 0.0
        for ev in trace.events:
            if _is_msg(ev, client_kind):
                ins_before += 1
                last_in_t = ev.t
                continue
            if not _is_msg(ev, server_kind):
                continue
            with trio.move_on_after(timeout) as waited:
                async with arrived:
                    while len(received) < ins_before:
                        await arrived.wait()
            if waited.cancelled_caught:
                print(f"replay --serve: the client did not send input {ins_before} within "
                      f"{timeout:g} s; stopping", file=err)
                mismatches += 1
                break
            if len(received) == ins_before:
                gate_time = max(gate_time, trio.current_time())
            await trio.sleep_until(gate_time + max(0.0, ev.t - last_in_t))
            await transport.send([(_payload(ev), None)])
        with trio.move_on_after(timeout):
            async with arrived:
                while len(received) < len(inputs):
                    await arrived.wait()
        nursery.cancel_scope.cancel()
    await transport.aclose()
    return 1 if mismatches else 0


def _same_call(expected: Any, actual: Any) -> bool:
    """Inputs match when they are the same request/notification/response by method and
    id (a real client's own details, such as its clientInfo, may differ)."""
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return bool(expected == actual)
    return bool(expected.get("method") == actual.get("method")
                and expected.get("id") == actual.get("id"))


def serve_trace(trace: Trace, *, timeout: float) -> int:
    """Play the recorded server over stdio; 0 if the client sent what was recorded."""
    return trio.run(_serve, trace, timeout, sys.stderr)
