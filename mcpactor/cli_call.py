"""``mcpactor call``: poke any MCP server from the shell.

::

    mcpactor call "python server.py"                       # list the tools
    mcpactor call "python server.py" add '{"a": 1, "b": 2}'
    mcpactor call http://127.0.0.1:8000/mcp echo '{"text": "hi"}' --json
    mcpactor call ws://127.0.0.1:8000/mcp --read demo://greeting
    mcpactor call "python server.py" --prompt review --args '{"code": "x = 1"}'
    mcpactor call "python server.py" slow '{"n": 3}' --trace call.jsonl
    mcpactor call "python server.py" slow '{"n": 3}' --task    # as a task: statuses, result

The target is a command line (spawned over stdio), an ``http(s)://`` URL (Streamable
HTTP, falling back to legacy HTTP+SSE) or a ``ws(s)://`` URL. A tool's text content is
printed as it is, other content and structured results as JSON (``--json``: the whole
result as JSON). Exit status: 0, 1 when the tool reports an error (``isError``), 2 for a
mistake (a target that cannot be reached, arguments that are not a JSON object, an
unknown tool), with one line saying what went wrong. Options may come anywhere on the
line (``call TARGET --json TOOL ARGS``).

A server started from a command line writes its logs on its stderr; ``call`` reads them
from a pipe and shows them only when the call fails (exit 1 or 2), after the output and
before the one-line error, each line marked ``server|``: a tool's traceback there is the
server's report of the tool's failure, not this command crashing. ``--server-log`` shows
them as they come.

A reader that stops reading (``mcpactor call ... | head``) ends the output quietly:
nothing on stderr, and the exit status the call would have had anyway (not 141, the
status of a process killed by SIGPIPE): a cut output says nothing about the server or
the call, and the status keeps saying whether the tool reported an error.

``--task`` calls the tool as a task, in either revision (2025-11-25's tasks, or the
2026-07-28 tasks extension): each status the task goes through is printed on stderr
(``task 3f2a9c…: working: step 2``) as the server reports it or as polling finds it,
then the result as usual; Ctrl-C cancels the task on the server first. A tool whose
``execution.taskSupport`` is ``required`` runs as a task without the flag too (in
2026-07-28 any call the server turns into a task is followed to its result); one that
does not take tasks is a mistake (exit 2) with ``--task``. ``--ttl`` (2025-11-25 only)
asks the server to keep the task that long.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``call`` subcommand."""
    from mcpactor.cli import positive_float

    p = sub.add_parser(
        "call", help="call a tool of any MCP server (or list its tools)",
        description="Connect to an MCP server (a command over stdio, an http(s):// or "
        "ws(s):// URL), then list its tools, call one, read a resource or get a prompt.",
    )
    p.add_argument("target", help="a command line ('python server.py') or a URL")
    p.add_argument("tool", nargs="?", help="the tool to call (none: list the tools)")
    p.add_argument("arguments", nargs="?",
                   help="the tool's arguments as a JSON object (default: {})")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--read", metavar="URI", help="read a resource instead")
    what.add_argument("--prompt", metavar="NAME", help="get a prompt instead")
    p.add_argument("--args", metavar="JSON", dest="prompt_arguments", default="{}",
                   help="the prompt's arguments as a JSON object (with --prompt)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--timeout", type=positive_float, default=60.0, metavar="SECONDS",
                   help="for connecting and for the call (default: 60)")
    p.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                   help="an HTTP or WebSocket request header; repeatable")
    p.add_argument("--trace", metavar="PATH", help="record the client's side of the session")
    p.add_argument("--task", action="store_true",
                   help="call the tool as a task (2025-11-25 tasks, or the 2026-07-28 "
                   "tasks extension): print its status changes on stderr, then the result "
                   "(a tool that requires it runs as one anyway)")
    p.add_argument("--mode", default="auto", choices=("auto", "legacy", "2026-07-28"),
                   help="the protocol to speak: auto (2026-07-28 if the server offers it, "
                   "else the handshake), legacy (the handshake, up to 2025-11-25), or "
                   "2026-07-28 (default: auto)")
    p.add_argument("--ttl", type=positive_float, metavar="SECONDS",
                   help="with --task, on 2025-11-25: how long the server should keep the "
                   "task")
    p.add_argument("--server-log", action="store_true",
                   help="show the stderr of a server started from a command line as it "
                   "comes, each line marked 'server|' (without it, that stderr is shown "
                   "only when the call fails)")
    p.set_defaults(func=cmd_call, take_positionals=_take_positionals)


def _take_positionals(args: argparse.Namespace, extra: list[str]) -> bool:
    """Options may come anywhere (``call TARGET --json TOOL ARGS``): argparse fills
    the positionals only up to the first option, so the ones after it come here, in
    order; False (argparse's error) for an unknown option or one too many."""
    for value in extra:
        if value.startswith("-") and value != "-":
            return False
        if args.tool is None:
            args.tool = value
        elif args.arguments is None:
            args.arguments = value
        else:
            return False
    return True


def _cli_error(message: str) -> Exception:
    from mcpactor.cli import CliError

    return CliError(message)


def _arguments(text: str, for_what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _cli_error(f"{for_what} must be a JSON object, e.g. '{{\"text\": \"hi\"}}' "
                         f"({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise _cli_error(f"{for_what} must be a JSON object, e.g. '{{\"text\": \"hi\"}}', "
                         f"not {type(value).__name__}")
    return value


def _headers(items: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise _cli_error(f"--header {item!r}: use NAME:VALUE, e.g. 'Authorization: "
                             "Bearer TOKEN'")
        headers[name.strip()] = value.strip()
    return headers


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://", "ws://", "wss://"))


@asynccontextmanager
async def _connect(target: str, headers: dict[str, str], options: dict[str, Any],
                   server_log: ServerLog) -> AsyncIterator[Any]:
    from mcpactor.client import connect_http, connect_stdio, connect_websocket

    if target.startswith(("http://", "https://")):
        async with connect_http(target, headers=headers, **options) as client:
            yield client
    elif target.startswith(("ws://", "wss://")):
        async with connect_websocket(target, headers=headers, **options) as client:
            yield client
    else:
        command = shlex.split(target)
        if not command:
            raise _cli_error("the target is empty: give a command line or a URL")
        if headers:
            raise _cli_error("--header applies to http(s):// and ws(s):// targets only")
        async with server_log.collecting() as stderr, \
                connect_stdio(command, stderr=stderr, **options) as client:
            yield client


class ServerLog:
    """The stderr of a server ``call`` started: read from a pipe as it comes (so the
    server never blocks on it), and either shown at once, each line marked as the
    server's (``--server-log``), or kept (the last :attr:`KEEP` lines) and shown only
    if the call fails. A server's log is not ours: a tool's traceback there is the
    server reporting the tool's failure, not this command crashing."""

    KEEP = 200

    def __init__(self, *, live: bool) -> None:
        self.live = live
        self.lines: deque[str] = deque(maxlen=self.KEEP)
        self.count = 0

    @asynccontextmanager
    async def collecting(self) -> AsyncIterator[int]:
        """A pipe's write end to give the server as its stderr, read until the server
        and this block are done."""
        from mcpactor.session.groups import plain_errors

        read_end, write_end = os.pipe()
        stream = trio.lowlevel.FdStream(read_end)
        try:
            with plain_errors():  # the block's own exception, not a group of one
                async with trio.open_nursery() as nursery:
                    done = trio.Event()
                    nursery.start_soon(self._pump, stream, done)
                    try:
                        yield write_end
                    finally:
                        os.close(write_end)  # the server's copy is the last: EOF at its exit
                        write_end = -1
                        with trio.move_on_after(1) as late:
                            late.shield = True
                            await done.wait()
                        nursery.cancel_scope.cancel()  # a grandchild may hold it open
        finally:
            if write_end >= 0:
                os.close(write_end)
            await stream.aclose()

    async def _pump(self, stream: trio.lowlevel.FdStream, done: trio.Event) -> None:
        pending = b""
        try:
            while data := await stream.receive_some(65536):
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    self._line(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if pending:
                self._line(pending)
            done.set()

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        self.count += 1
        if self.live:
            _stderr(f"server| {text}")
        else:
            self.lines.append(text)

    def show(self) -> None:
        """After a failed call: what the server wrote on stderr, marked as its own."""
        if self.live or not self.lines:
            return
        cut = self.count - len(self.lines)
        more = f", the last {len(self.lines)} of {self.count} lines" if cut else ""
        _stderr(f"mcpactor: the server's stderr{more}:")
        for line in self.lines:
            _stderr(f"  server| {line}")


def _stderr(text: str) -> None:
    try:
        print(text, file=sys.stderr, flush=True)
    except (BrokenPipeError, ValueError):
        pass


class _Stdout:
    """Where ``call`` prints: once the reader has closed the pipe (EPIPE), the rest of
    the output is dropped and the command goes on to its normal end."""

    def __init__(self) -> None:
        self.closed = False

    def line(self, text: str) -> None:
        """Print one line (unless the reader is gone)."""
        if not self.closed:
            try:
                print(text)
            except BrokenPipeError:
                self._gone()

    def json(self, value: Any) -> None:
        """Print a value as indented JSON."""
        self.line(json.dumps(value, indent=2, ensure_ascii=False))

    def flush(self) -> None:
        """Write out what is buffered (unless the reader is gone)."""
        if not self.closed:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.closed = True
        # What is still buffered would be flushed again at exit, and Python would print
        # "Exception ignored ... BrokenPipeError": send it to /dev/null instead.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


async def _run(args: argparse.Namespace, out: _Stdout, server_log: ServerLog) -> int:
    from mcpactor.protocol import types as t
    from mcpactor.protocol.convert import to_wire

    headers = _headers(args.header)
    options: dict[str, Any] = {"timeout": args.timeout, "init_timeout": args.timeout,
                               "client_info": {"name": "mcpactor-call", "version": "1"}}
    if args.trace:
        options["trace"] = args.trace
    if args.mode != "auto":
        options["mode"] = args.mode
    arguments = (_arguments(args.arguments if args.arguments is not None else "{}",
                            "ARGUMENTS") if args.tool is not None else {})
    if (args.task or args.ttl is not None) and args.tool is None:
        raise _cli_error("--task and --ttl need a tool: mcpactor call TARGET TOOL ARGS --task")
    if (args.read or args.prompt) and args.tool is not None:
        flag = "--read URI" if args.read else "--prompt NAME"
        raise _cli_error(f"{flag} takes no tool name: mcpactor call TARGET {flag}")
    prompt_arguments = _arguments(args.prompt_arguments, "--args") if args.prompt else {}
    if args.server_log and _is_url(args.target):
        raise _cli_error("--server-log applies to a server started from a command line only")
    async with _connect(args.target, headers, options, server_log) as client:
        if args.read:
            result = await client.read_resource(args.read)
            if args.json:
                out.json(to_wire(result))
            for item in result.contents:
                text = getattr(item, "text", None)
                if not args.json:
                    out.line(text if text is not None else json.dumps(to_wire(item)))
            return 0
        if args.prompt:
            got = await client.get_prompt(
                args.prompt, {k: str(v) for k, v in prompt_arguments.items()})
            out.json(to_wire(got))
            return 0
        tools = await client.list_all_tools()
        if args.tool is None:
            if args.json:
                out.json([to_wire(tool) for tool in tools])
            for tool in tools if not args.json else ():
                params = ", ".join((tool.input_schema or {}).get("properties", {}))
                summary = (tool.description or "").strip().splitlines()
                out.line(f"{tool.name}({params})" + (f"  {summary[0]}" if summary else ""))
            return 0
        if args.tool not in {tool.name for tool in tools}:
            names = ", ".join(sorted(tool.name for tool in tools)) or "none"
            raise _cli_error(f"the server has no tool {args.tool!r} (its tools: {names})")
        tool = next(tool for tool in tools if tool.name == args.tool)
        support = tool.execution.task_support if tool.execution is not None else None
        if client.stateless:
            # The tasks extension: the server decides per call; it lists no
            # taskSupport unless it is one that does (as mcpactor does).
            # (Pinned to the revision without server/discover, its capabilities are
            # unknown: the server says.)
            takes_tasks = (client.session.connection.peer_capabilities is None
                           or t.declares_tasks_extension(client.server_capabilities))
            shown = any(x.execution is not None for x in tools)
            takes = takes_tasks and support != "forbidden" and (support is not None
                                                                 or not shown)
            if args.ttl is not None:
                raise _cli_error(f"--ttl applies to 2025-11-25 tasks; {args.target} speaks "
                                 f"{client.protocol_version}, where the server picks the TTL")
        else:
            takes_tasks = t.accepts_task(client.server_capabilities, "tools/call")
            takes = takes_tasks and support in ("optional", "required")
        if args.task or (support == "required" and takes_tasks and not client.stateless):
            if not takes:
                raise _cli_error(f"the tool {args.tool!r} does not run as a task (its "
                                 f"execution.taskSupport is {support or 'forbidden'!r}): "
                                 "call it without --task")
            called = await _as_task(client, args, arguments)
        else:
            if args.ttl is not None:
                raise _cli_error("--ttl applies to a call with --task")
            called = await client.call_tool(args.tool, arguments)
        if args.json:
            out.json(to_wire(called))
        else:
            for item in called.content:
                text = getattr(item, "text", None)
                out.line(text if getattr(item, "type", None) == "text" and text is not None
                         else json.dumps(to_wire(item), ensure_ascii=False))
            if called.structured_content is not None and not called.content:
                out.json(called.structured_content)
        return 1 if called.is_error else 0


async def _as_task(client: Any, args: argparse.Namespace, arguments: dict[str, Any]) -> Any:
    """Call the tool as a task: its statuses on stderr, then the result. 2025-11-25:
    while ``tasks/result`` waits (the server may send what the task needs answered on
    it); the extension: the polling that follows the statuses answers its questions,
    and the result comes with the last one."""
    handle = await client.call_tool_task(args.tool, arguments, ttl=args.ttl)
    if not handle.task_id:
        print("the server answered at once, without a task", file=sys.stderr, flush=True)
        return await handle.result()
    short = handle.task_id[:12] + ("…" if len(handle.task_id) > 12 else "")
    from mcpactor.session.groups import plain_errors

    result: list[Any] = []
    try:
        with plain_errors():
            async with trio.open_nursery() as nursery:

                async def fetch() -> None:
                    result.append(await handle.result())

                if not handle.extension:
                    nursery.start_soon(fetch)
                async for task in handle.statuses():
                    line = f"task {short}: {task.status}"
                    if task.status_message:
                        line += f": {task.status_message}"
                    print(line, file=sys.stderr, flush=True)
                if handle.extension:
                    await fetch()
    except BaseException:
        if not handle.terminal:
            # Ctrl-C (or any failure of ours) leaves no orphan task on the server.
            with trio.move_on_after(2) as cleanup:
                cleanup.shield = True
                try:
                    await handle.cancel()
                    print(f"task {short}: cancelled", file=sys.stderr)
                except Exception:
                    pass
        raise
    return result[0]


def cmd_call(args: argparse.Namespace) -> int:
    """``mcpactor call``."""
    from mcpactor.cli import CliError
    from mcpactor.protocol.errors import McpError

    out = _Stdout()
    server_log = ServerLog(live=args.server_log)
    failed = True
    try:
        status = trio.run(_run, args, out, server_log)
        failed = status != 0
        return status
    except CliError:
        raise
    except McpError as exc:
        raise _cli_error(f"{args.target}: {exc.message}") from None
    except (OSError, ValueError) as exc:
        if _is_url(args.target):
            raise _cli_error(f"{args.target}: {exc}") from None
        raise _cli_error(f"cannot reach {args.target}: {exc} (give a command line that "
                         "starts an MCP server over stdio, or an http(s):// or ws(s):// "
                         "URL)") from None
    except trio.TooSlowError:
        raise _cli_error(f"{args.target} did not answer within {args.timeout:g} s "
                         "(--timeout)") from None
    except Exception as exc:  # a transport failure: say it in one line
        raise _cli_error(f"{args.target}: {type(exc).__name__}: {exc}") from None
    finally:
        out.flush()
        if failed:
            # Before the one line that says what failed: that line stays the last.
            server_log.show()
