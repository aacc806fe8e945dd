"""The stdio transport: a server on its own stdin/stdout, a client spawning a server.

The server side wraps file descriptors 0 and 1 directly in Trio streams (no worker
threads), and everything it logs goes to stderr: stdout carries only MCP messages.
The client side spawns the server process and shuts it down in the order the spec
gives: close its stdin, wait, SIGTERM, wait, SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

import trio

from mcpactor.protocol.framing import DEFAULT_MAX_MESSAGE
from mcpactor.transports.fdstream import FdStream
from mcpactor.transports.stream import StreamTransport


class StdioServerTransport(StreamTransport):
    """The server end of stdio: messages on stdin, answers on stdout."""

    name = "stdio"

    def __init__(
        self,
        *,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        max_message_size: int = DEFAULT_MAX_MESSAGE,
        protect_stdout: bool = True,
    ) -> None:
        out_fd = os.dup(stdout_fd)
        if protect_stdout and stdout_fd == 1:
            # A stray print() (or a C library writing to fd 1) would corrupt the message
            # stream: keep a private copy of stdout for messages and point fd 1 at stderr.
            sys.stdout.flush()
            os.dup2(2, 1)
        super().__init__(
            FdStream(out_fd),
            FdStream(os.dup(stdin_fd)),
            max_message_size=max_message_size,
        )


class StdioClientTransport(StreamTransport):
    """The client end of stdio: owns the server process it spawned."""

    name = "stdio"

    def __init__(self, process: trio.Process, *, max_message_size: int, shutdown_timeout: float):
        assert process.stdin is not None and process.stdout is not None
        super().__init__(process.stdin, process.stdout, max_message_size=max_message_size)
        self.process = process
        self.shutdown_timeout = shutdown_timeout
        self._closed = False

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE,
        shutdown_timeout: float = 2.0,
    ) -> StdioClientTransport:
        """Start ``command`` with pipes on stdin and stdout (stderr is inherited)."""
        full_env = None
        if env is not None:
            full_env = {**os.environ, **env}
        try:
            process = await trio.lowlevel.open_process(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=full_env,
                cwd=cwd,
            )
        except OSError as exc:
            raise OSError(f"cannot start MCP server {list(command)!r}: {exc}") from exc
        return cls(process, max_message_size=max_message_size, shutdown_timeout=shutdown_timeout)

    async def aclose(self) -> None:
        """Close stdin, give the server time to exit, then SIGTERM, then SIGKILL."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            proc = self.process
            assert proc.stdin is not None
            try:
                await proc.stdin.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None and proc.returncode is None:
                    try:
                        proc.send_signal(sig)
                    except ProcessLookupError:
                        pass
                with trio.move_on_after(self.shutdown_timeout):
                    await proc.wait()
                if proc.returncode is not None:
                    break
            await super().aclose()


def python_command(path_or_module: str, *args: str) -> list[str]:
    """A command that runs a Python server file or ``-m module`` with this interpreter."""
    if path_or_module.endswith(".py"):
        return [sys.executable, path_or_module, *args]
    return [sys.executable, "-m", path_or_module, *args]
