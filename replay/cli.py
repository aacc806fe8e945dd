"""``mcpactor replay`` and ``mcpactor trace``: found by ``mcpactor.cli_extra``.

Exit status: 0 a faithful replay (or identical traces), 1 a divergence (or different
traces), 2 a problem with the input (printed as one line by ``mcpactor.cli``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from mcpactor.tracing.encode import dumps

from .trace import Event, Trace, TraceError, load_trace


def _cli_error(message: str) -> Exception:
    from mcpactor.cli import CliError

    return CliError(message)


def _load(path: str, *, require_end: bool = True) -> Trace:
    try:
        return load_trace(path, require_end=require_end)
    except TraceError as exc:
        raise _cli_error(str(exc)) from None


def register(sub: Any) -> None:
    """Add the ``replay`` and ``trace`` subcommands."""
    p = sub.add_parser(
        "replay",
        help="re-execute a recorded session deterministically and compare",
        description="Replay a trace against the real code on a virtual clock (a server-side "
        "trace: the server's handlers; a client-side trace: the client code); exit 0 if "
        "every recorded event happens again, 1 at the first divergence.",
    )
    p.add_argument("trace", help="the JSONL trace")
    p.add_argument("--server", metavar="MODULE:ATTR",
                   help="server entry point of a server-side trace (default: the header's)")
    p.add_argument("--client", metavar="MODULE:ATTR",
                   help="client code of a client-side trace, an `async def main(client)` or "
                        "a ClientScript (default: the header's)")
    from mcpactor.cli import positive_float, positive_int

    p.add_argument("--until", type=positive_int, metavar="N", help="stop after event N")
    p.add_argument("--break-at", type=positive_int, metavar="N",
                   help="enter the debugger just before event N")
    p.add_argument("--step", action="store_true", help="print each event as it is replayed")
    p.add_argument("--output", "-o", metavar="PATH", help="write the replayed session's trace")
    p.add_argument(
        "--against", metavar="CMD|URL",
        help="send the recorded client side to a live server (a command over stdio, or an "
        "http(s):// or ws(s):// URL) and report where its answers differ",
    )
    p.add_argument(
        "--serve", action="store_true",
        help="play the recorded server over stdio to a real client",
    )
    p.add_argument("--schedules", type=positive_int, default=1024, metavar="N",
                   help="at most N runs when searching for the recorded interleaving "
                        "(default: %(default)s)")
    p.add_argument("--timeout", type=positive_float, default=10.0,
                   help="seconds to wait for each live answer (--against, --serve)")
    p.add_argument("--interleaving", "--request", dest="interleaving", metavar="ID",
                   help="replay up to request ID (a JSON value: 3, or '\"abc\"') and, if "
                   "faithful, show its steps: which task ran between which awaits")
    p.add_argument("--session", metavar="SID",
                   help="with --interleaving: the session of the request (whole-process "
                   "traces where several sessions used the id)")
    p.set_defaults(func=cmd_replay)

    t = sub.add_parser("trace", help="read traces: show, diff, html")
    tsub = t.add_subparsers(dest="trace_command", metavar="COMMAND", required=True)
    show = tsub.add_parser("show", help="a readable timeline with request latencies")
    show.add_argument("trace")
    show.add_argument("--all", action="store_true", help="include actor start/stop events")
    show.add_argument("--interleaving", "--request", dest="interleaving", metavar="ID",
                      help="replay the trace and show the steps around request ID")
    show.add_argument("--session", metavar="SID",
                      help="with --request: the session of the request (whole-process "
                      "traces where several sessions used the id)")
    show.set_defaults(func=cmd_show)
    diff = tsub.add_parser("diff", help="compare two traces event by event")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--messages", action="store_true", help="compare only messages in/out")
    diff.set_defaults(func=cmd_diff)
    html = tsub.add_parser("html", help="a self-contained sequence-diagram page")
    html.add_argument("trace")
    html.add_argument("-o", "--output", required=True, metavar="OUT.html")
    html.add_argument("--interleaving", "--request", dest="interleaving", metavar="ID",
                      help="replay the trace and add the steps around request ID")
    html.add_argument("--session", metavar="SID",
                      help="with --request: the session of the request (whole-process "
                      "traces where several sessions used the id)")
    html.set_defaults(func=cmd_html)
    find = tsub.add_parser(
        "find", help="the recorded request of a W3C trace id, and how to replay it",
        description="Search traces for the request of an OpenTelemetry trace id (as a "
        "tracing UI shows it, or a whole traceparent): the file, the event, and the "
        "`mcpactor replay` command that replays up to it. Exit 0 if found, 1 if not.")
    find.add_argument("trace_id", metavar="TRACE_ID")
    find.add_argument("paths", nargs="+", metavar="PATH", help="trace files or folders")
    find.set_defaults(func=cmd_find)
    export = tsub.add_parser(
        "export", help="write a trace in another tool's format (Perfetto, chrome://tracing)")
    export.add_argument("trace")
    export.add_argument("--format", required=True, choices=["perfetto"],
                        help="perfetto: Chrome trace-event JSON (Perfetto UI, chrome://tracing)")
    export.add_argument("-o", "--output", required=True, metavar="OUT.json")
    export.set_defaults(func=cmd_export)


def cmd_replay(args: argparse.Namespace) -> int:
    """``mcpactor replay``."""
    if args.serve and args.against is not None:
        raise _cli_error("--serve (play the recorded server to a client) and --against (play "
                         "the recorded client to a server) exclude each other")
    if args.against is not None and not args.against.strip():
        raise _cli_error("--against needs a command line that starts an MCP server over "
                         "stdio (e.g. 'python server.py') or an http(s):// or ws(s):// URL, "
                         "not an empty string")
    request = _request_id(args.interleaving) if args.interleaving is not None else None
    trace = _load(args.trace, require_end=args.until is None and request is None)
    if request is not None and args.until is None and not (args.serve or args.against is not None):
        # Up to the request (its answer, or the last thing its handler did) is enough.
        args.until = _request_end(trace, request, args.session)
    seed = trace.header.get("hash_seed")
    if isinstance(seed, int) and not (args.serve or args.against is not None) and getattr(
            args, "restartable", False):
        from mcpactor.tracing.seeds import run_with_hash_seed

        # The recording's string-hash seed (set iteration order); this starts the
        # command again with it unless it is already this process's.
        run_with_hash_seed(seed)
    if args.serve:
        from .live import serve_trace

        return serve_trace(trace, timeout=args.timeout)
    if args.against is not None:
        from .live import TargetError, replay_against

        try:
            return replay_against(trace, args.against, timeout=args.timeout, out=sys.stdout)
        except TargetError as exc:
            raise _cli_error(str(exc)) from None
        except OSError as exc:
            raise _cli_error(_against_error(args.against, exc)) from None
    from .engine import ReplayError, ReplayOptions, replay
    from .render import event_line
    from .report import print_verdict

    def on_step(expected: Event, actual: dict[str, Any]) -> None:
        print(f"  ok {event_line({**actual, 'seq': expected.seq, 't': expected.t})}", flush=True)

    def on_break(ev: Event) -> None:
        print(f"replay: stopped before {event_line(ev.data)}", file=sys.stderr, flush=True)
        breakpoint()

    if request is not None and trace.version < 2:
        raise _cli_error("--interleaving needs a trace of format version 2 (recorded with "
                         "the schedule): record it again with this mcpactor")
    options = ReplayOptions(
        server=args.server,
        client=args.client,
        until=args.until,
        break_at=args.break_at,
        on_step=on_step if args.step else None,
        on_break=on_break,
        schedules=max(1, args.schedules),
        locate=request is not None,
    )
    started = time.perf_counter()
    try:
        result = replay(trace, options)
    except ReplayError as exc:
        raise _cli_error(str(exc)) from None
    elapsed = time.perf_counter() - started
    if args.output:
        _write(args.output, result.output_bytes())
    print_verdict(result, elapsed, sys.stdout, trace.header)
    if request is not None and result.faithful:
        from .interleave import NoSuchRequest, interleaving, print_interleaving

        try:
            view = interleaving(trace, result, request, args.session)
        except NoSuchRequest as exc:
            raise _cli_error(str(exc)) from None
        print(file=sys.stdout)
        print_interleaving(view, sys.stdout)
    if result.changes is not None:
        from .compare import print_comparison

        print(f"\nThe new code on the recorded inputs ({args.server}):", file=sys.stdout)
        print_comparison(result.changes, sys.stdout, what="responses")
        return 0 if result.changes.same else 1
    return 0 if result.faithful else 1


def _request_end(trace: Trace, request: Any, session: str | None) -> int:
    """The seq of the last event of request ``request``'s handling (its response, or
    its handler's last event); a one-line error if the trace has no such request."""

    key = dumps(request)
    actor = f"handler:{request}"
    last: int | None = None
    sessions: set[str | None] = set()
    for ev in trace.events:
        if session is not None and ev.session != session:
            continue
        mine = ev.actor == actor and dumps(ev.data.get("id")) == key
        answer = ev.kind == "message_out" and dumps(ev.data.get("related")) == key
        if mine or answer:
            last = ev.seq
            sessions.add(ev.session)
    if last is None or not sessions:
        where = f" in session {session}" if session else ""
        raise _cli_error(f"no handler ran for request {key.decode()}{where} in "
                         f"{trace.path} (the request ids are the ones in message_in events; "
                         "`mcpactor trace show` lists them)")
    if len(sessions) > 1:
        raise _cli_error(f"{trace.path}: several sessions have a request {key.decode()}: "
                         "name one with --session SID")
    return last


def _request_id(text: str) -> Any:
    """A request id as given on the command line: JSON (3, "abc"), else the text."""
    from mcpactor.tracing.encode import loads

    try:
        value = loads(text)  # an id past 64 bits exact, as the trace holds it
    except ValueError:
        return text
    return value if isinstance(value, int | str) and not isinstance(value, bool) else text


def _against_error(target: str, exc: OSError) -> str:
    return (f"cannot reach {target}: {exc} (--against takes a command line that starts an "
            "MCP server over stdio, e.g. 'python server.py', or an http(s):// or ws(s):// URL)")


def cmd_show(args: argparse.Namespace) -> int:
    """``mcpactor trace show``."""
    from .show import show

    trace = _load(args.trace, require_end=False)
    show(trace, sys.stdout, everything=args.all)
    if args.interleaving is not None:
        from .interleave import print_interleaving

        print(file=sys.stdout)
        print_interleaving(_interleaving(trace, args.interleaving, args.session), sys.stdout)
    return 0


def _interleaving(trace: Trace, request: str, session: str | None = None) -> Any:
    """Replay ``trace`` (exactly, noting where each step resumed) and pick the steps
    around ``request``; one-line errors for what prevents it."""
    from .engine import ReplayError, ReplayOptions, replay
    from .interleave import NoSuchRequest, interleaving

    if trace.version < 2:
        raise _cli_error("--interleaving needs a trace of format version 2 (recorded with "
                         "the schedule): record it again with this mcpactor")
    # Before the replay: an id several sessions used needs --session (as `replay`).
    _request_end(trace, _request_id(request), session)
    try:
        result = replay(trace, ReplayOptions(locate=True))
    except ReplayError as exc:
        raise _cli_error(str(exc)) from None
    if not result.faithful:
        raise _cli_error("the replay diverged (run `mcpactor replay` for where): the "
                         "interleaving is shown for a faithful replay only")
    try:
        return interleaving(trace, result, _request_id(request), session)
    except NoSuchRequest as exc:
        raise _cli_error(str(exc)) from None


def cmd_find(args: argparse.Namespace) -> int:
    """``mcpactor trace find``."""
    from .find import BadTraceId, find, parse_trace_id, print_found

    try:
        trace_id = parse_trace_id(args.trace_id)
        found = find(trace_id, args.paths)
    except BadTraceId as exc:
        raise _cli_error(str(exc)) from None
    except FileNotFoundError as exc:
        raise _cli_error(str(exc)) from None
    print_found(found, trace_id, sys.stdout)
    return 0 if found else 1


def cmd_export(args: argparse.Namespace) -> int:
    """``mcpactor trace export``."""
    from .perfetto import to_chrome_trace

    trace = _load(args.trace, require_end=False)

    _write(args.output, dumps(to_chrome_trace(trace)))
    print(f"wrote {args.output} (open it in https://ui.perfetto.dev or chrome://tracing)")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """``mcpactor trace diff``."""
    from .show import diff

    return diff(_load(args.a, require_end=False), _load(args.b, require_end=False), sys.stdout,
                messages_only=args.messages)


def cmd_html(args: argparse.Namespace) -> int:
    """``mcpactor trace html``."""
    from .html import render_html

    trace = _load(args.trace, require_end=False)
    view = (_interleaving(trace, args.interleaving, args.session)
            if args.interleaving is not None else None)
    _write(args.output, render_html(trace, view).encode("utf-8"))
    print(f"wrote {args.output}")
    return 0


def _write(path: str, data: bytes) -> None:
    # An output path the user got wrong is their mistake to fix, not a traceback.
    try:
        Path(path).write_bytes(data)
    except BrokenPipeError:
        raise  # -o /dev/stdout read by ``| head``: the command's end handles it quietly
    except OSError as exc:
        raise _cli_error(f"cannot write {path}: {exc.strerror or exc} "
                         "(check that the folder exists and is writable)") from None
