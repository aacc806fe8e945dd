"""``mcpactor run --workers N``: N worker processes serving one listening socket.

The supervisor binds the socket once and every worker inherits it (the pre-fork
model), rather than each worker binding its own with ``SO_REUSEPORT``: connections
waiting in the kernel's accept queue belong to the socket, not to a worker, so a worker
that dies loses none of them (with ``SO_REUSEPORT`` each socket has its own queue, and
the kernel resets the connections queued on a dead one), and ``--port 0`` works (the
supervisor knows the port before any worker starts). A busy worker is not waiting in
``accept``, so new connections go to the idle ones.

The supervisor restarts a worker that exits while serving, after a backoff that grows
while the worker keeps dying young (``RESTART_BACKOFF``), and on SIGTERM or SIGINT
stops them all: SIGTERM to each worker (which closes its sessions and exits, see
:mod:`mcpactor.server.termination`), then SIGKILL for those still running after the
grace period.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence

import attrs
import trio

log = logging.getLogger("mcpactor.workers")

__all__ = [
    "RESTART_BACKOFF",
    "WORKER_ENV",
    "WorkerPlan",
    "bind_listener",
    "inherited_listener",
    "supervise",
    "worker_trace_path",
]

#: Environment variable that tells a worker process which inherited descriptor is the
#: listening socket, and its index and generation: ``"FD,INDEX,GENERATION"``.
WORKER_ENV = "MCPACTOR_WORKER"
#: Seconds before restarting a worker: the first, the factor, the cap; a worker that
#: lived ``BACKOFF_RESET`` seconds starts again from the first.
RESTART_BACKOFF = (0.1, 2.0, 10.0)
BACKOFF_RESET = 30.0


@attrs.frozen(kw_only=True)
class WorkerPlan:
    """What the supervisor runs: ``command(index, generation)`` is a worker's argv."""

    count: int
    command: Callable[[int, int], Sequence[str]]
    #: Seconds a worker has, after SIGTERM, to close its sessions before SIGKILL.
    grace: float = 15.0


def bind_listener(host: str, port: int, backlog: int = 4096) -> socket.socket:
    """The listening TCP socket the workers share (inheritable, not yet accepting)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def inherited_listener(value: str) -> tuple[socket.socket, int, int]:
    """The listening socket, index and generation a worker was given in
    :data:`WORKER_ENV`."""
    fd, index, generation = (int(part) for part in value.split(","))
    sock = socket.socket(fileno=fd)
    _die_with_parent()
    return sock, index, generation


def _die_with_parent() -> None:
    # A supervisor killed with SIGKILL cannot stop its workers: Linux can, by sending
    # each the signal of our choice when its parent dies.
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call: nobody will signal us
        os.kill(os.getpid(), signal.SIGTERM)


def worker_trace_path(path: str, index: int, generation: int) -> str:
    """Where worker ``index`` (its ``generation``-th start) records, given ``--trace``:
    a folder gets a subfolder per worker, a file a sibling per worker."""
    name = f"worker-{index}" + (f".{generation}" if generation else "")
    if path.endswith("/") or os.path.isdir(path):
        return os.path.join(path, name) + "/"
    root, ext = os.path.splitext(path)
    return f"{root}.{name}{ext or '.jsonl'}"


async def supervise(plan: WorkerPlan, sock: socket.socket) -> int:
    """Run ``plan.count`` workers on ``sock`` until SIGTERM or SIGINT; the exit status
    (0 after SIGTERM, 130 after SIGINT)."""
    stopping = trio.Event()
    procs: dict[int, trio.Process] = {}
    received = signal.SIGTERM

    async def keep(index: int) -> None:
        generation = 0
        delay = RESTART_BACKOFF[0]
        while not stopping.is_set():
            env = dict(os.environ)
            env[WORKER_ENV] = f"{sock.fileno()},{index},{generation}"
            started = time.monotonic()
            proc = await trio.lowlevel.open_process(
                list(plan.command(index, generation)), env=env, pass_fds=(sock.fileno(),))
            procs[index] = proc
            if stopping.is_set():  # the stop began while it was starting
                _signal(proc, signal.SIGTERM)
            log.info("worker %d started (pid %d)", index, proc.pid)
            try:
                code = await proc.wait()
            finally:
                procs.pop(index, None)
            if stopping.is_set():
                return
            lived = time.monotonic() - started
            if lived >= BACKOFF_RESET:
                delay = RESTART_BACKOFF[0]
            print(f"mcpactor: worker {index} (pid {proc.pid}) exited with status {code} "
                  f"after {lived:.1f}s; restarting in {delay:.1f}s", file=sys.stderr, flush=True)
            with trio.move_on_after(delay):
                await stopping.wait()
            delay = min(delay * RESTART_BACKOFF[1], RESTART_BACKOFF[2])
            generation += 1

    async def stop_all() -> None:
        for proc in list(procs.values()):
            _signal(proc, signal.SIGTERM)
        with trio.move_on_after(plan.grace):
            for proc in list(procs.values()):
                await proc.wait()
        for proc in list(procs.values()):
            if proc.returncode is None:
                log.warning("worker pid %d still running after %.0fs: killing it",
                            proc.pid, plan.grace)
                _signal(proc, signal.SIGKILL)
        for proc in list(procs.values()):
            await proc.wait()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            for index in range(plan.count):
                nursery.start_soon(keep, index)
            async for signum in signals:
                received = signal.Signals(signum)
                stopping.set()
                with trio.CancelScope(shield=True):
                    await stop_all()
                break
            nursery.cancel_scope.cancel()
    sock.close()
    return 130 if received == signal.SIGINT else 0


def _signal(proc: trio.Process, signum: int) -> None:
    try:
        proc.send_signal(signum)
    except ProcessLookupError:
        pass
