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

import shlex
import sys
from typing import Any, TextIO

import trio

from mcpactor.tracing.encode import input_bytes, loads
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


async def _open(target: str, nursery: trio.Nursery) -> Transport:
    if target.startswith(("http://", "https://")):
        from mcpactor.transports.streamable_client import StreamableHttpClientTransport

        return StreamableHttpClientTransport(target, nursery, legacy_fallback=False,
                                             open_get_stream=True)
    from mcpactor.transports.stdio import StdioClientTransport

    # Generous shutdown: a server may drain in-flight work after end of input, and
    # killing it early would cut its own trace short.
    return await StdioClientTransport.spawn(shlex.split(target), shutdown_timeout=10.0)


class TargetError(Exception):
    """The live server could not be driven: it did not start, died, or never answered."""


async def _drive(trace: Trace, sid: str | None, events: list[Event], target: str,
                 timeout: float, got: list[tuple[str | None, Any]]) -> None:
    """Play one recorded session's client side to ``target``, collecting its answers."""
    received: list[Any] = []
    arrived = trio.Condition()
    ended = trio.Event()
    async with trio.open_nursery() as nursery:
        try:
            transport = await _open(target, nursery)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise TargetError(
                f"cannot start {target}: {why} (--against takes a command line that starts "
                "an MCP server over stdio, e.g. 'python server.py', or an http(s) URL)"
            ) from None

        async def reader() -> None:
            try:
                while True:
                    data = await transport.receive()
                    if isinstance(data, bytes):
                        try:
                            msg = loads(data)
                        except ValueError:
                            msg = data.decode("utf-8", "replace")
                        received.append(msg)
                        got.append((sid, msg))
                        async with arrived:
                            arrived.notify_all()
            except Exception:
                pass
            finally:
                ended.set()
                async with arrived:
                    arrived.notify_all()

        async def wait_outputs(count: int) -> None:
            with trio.move_on_after(timeout):
                async with arrived:
                    while len(received) < count and not ended.is_set():
                        await arrived.wait()

        nursery.start_soon(reader)
        client_kind, server_kind = sides(trace)
        outs_before = 0
        started = trio.current_time()
        first_t: float | None = None
        sent = 0
        for ev in events:
            if _is_msg(ev, server_kind):
                outs_before += 1
                continue
            if not (_is_msg(ev, client_kind)
                    or (ev.kind == "transport_closed" and trace.role == "server")):
                continue
            await wait_outputs(outs_before)
            if ended.is_set() and ev.kind != "transport_closed":
                raise TargetError(await _gone(target, transport, len(received), sent))
            # Keep the recorded pacing between inputs (timers, late cancellations).
            first_t = ev.t if first_t is None else first_t
            await trio.sleep_until(started + (ev.t - first_t))
            if ev.kind == "transport_closed":
                break
            try:
                await transport.send([(_payload(ev), None)])
            except Exception:
                raise TargetError(await _gone(target, transport, len(received), sent)) from None
            sent += 1
        await wait_outputs(outs_before)
        if sent and not received:
            raise TargetError(f"{target} never answered: nothing came back within "
                              f"{timeout:g} s of the first request (--timeout sets the wait)")
        with trio.CancelScope(shield=True):
            await transport.aclose()
        nursery.cancel_scope.cancel()


async def _gone(target: str, transport: Any, answers: int, sent: int) -> str:
    process = getattr(transport, "process", None)
    if process is not None:
        with trio.move_on_after(1.0):
            await process.wait()
    status = getattr(process, "returncode", None)
    how = f"exited with status {status}" if status is not None else "closed the connection"
    return (f"{target} {how} after {answers} answer(s) to {sent} message(s); "
            "the rest of the recording could not be played to it")


async def _drive_all(trace: Trace, target: str,
                     timeout: float) -> list[tuple[str | None, Any]]:
    # One connection (one process, for a command) per recorded session, all at once.
    got: list[tuple[str | None, Any]] = []
    by_session: dict[str | None, list[Event]] = {}
    for ev in trace.events:
        by_session.setdefault(ev.session, []).append(ev)
    async with trio.open_nursery() as nursery:
        for sid, events in by_session.items():
            nursery.start_soon(_drive, trace, sid, events, target, timeout, got)
    return got


def replay_against(trace: Trace, target: str, *, timeout: float, out: TextIO) -> int:
    """Send the recorded client side to ``target``; 0 if every response matches the
    recorded one (by request id: see :mod:`replay.compare`). Raises
    :class:`TargetError` when the target cannot be driven."""
    from mcpactor.session.groups import sole_exception

    from .compare import compare, print_comparison, server_messages

    try:
        got = trio.run(_drive_all, trace, target, timeout)
    except BaseExceptionGroup as group:
        lone = sole_exception(group)
        if isinstance(lone, TargetError | OSError):
            raise lone from None
        raise
    recorded, methods = server_messages(trace)
    cmp = compare(recorded, got, methods)
    print_comparison(cmp, out, what=f"against {target}")
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
